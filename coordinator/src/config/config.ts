import path from 'node:path';

/**
 * The coordinator's configuration (CONTRACT §1): flags, then environment, then defaults,
 * validated once at start with messages that name the setting, then frozen and passed in.
 * Nothing reads process.env anywhere else.
 */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** Without trailing slash; `{base_url}` is `${publicUrl}/v1`. */
  readonly publicUrl: string;
  readonly bootstrap: { readonly email: string; readonly password: string; readonly org: string } | null;
  readonly apiTokenReadRateLimitPerMinute: number;
  readonly logLevel: LogLevel;
  readonly sessionTtlSeconds: number;
  readonly bodyLimitBytes: number;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Options as the CLI hands them over (strings, or undefined when the flag was not given). */
export interface ConfigFlags {
  port?: string | undefined;
  host?: string | undefined;
  dataDir?: string | undefined;
  publicUrl?: string | undefined;
  logLevel?: string | undefined;
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env, flags: ConfigFlags = {}, cwd = process.cwd()): Config {
  const problems: string[] = [];
  const pick = (flag: string | undefined, flagName: string | null, envName: string) => {
    if (flag !== undefined) return { value: flag, source: `--${flagName}` };
    const fromEnv = env[envName];
    if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, source: envName };
    return undefined;
  };
  const integer = (
    raw: { value: string; source: string } | undefined,
    fallback: number,
    min: number,
    max: number,
  ): number => {
    if (!raw) return fallback;
    const n = /^-?\d+$/.test(raw.value.trim()) ? Number(raw.value.trim()) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      problems.push(`${raw.source}: expected an integer from ${min} to ${max}, got \`${raw.value}\``);
      return fallback;
    }
    return n;
  };

  const port = integer(pick(flags.port, 'port', 'DROVER_PORT'), 8080, 0, 65535);

  const hostRaw = pick(flags.host, 'host', 'DROVER_HOST');
  const host = hostRaw?.value.trim() ?? '127.0.0.1';
  if (hostRaw && !/^[A-Za-z0-9.:[\]-]+$/.test(host)) {
    problems.push(`${hostRaw.source}: expected a host name or IP address, got \`${hostRaw.value}\``);
  }

  const dataDirRaw = pick(flags.dataDir, 'data-dir', 'DROVER_DATA_DIR');
  const dataDir = path.resolve(cwd, dataDirRaw?.value ?? './data');

  const publicUrlRaw = pick(flags.publicUrl, 'public-url', 'DROVER_PUBLIC_URL');
  let publicUrl = `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
  if (publicUrlRaw) {
    try {
      const url = new URL(publicUrlRaw.value);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol');
      if (url.search || url.hash) throw new Error('query');
      publicUrl = url.toString().replace(/\/+$/, '');
      if (publicUrl.endsWith('/v1')) {
        problems.push(`${publicUrlRaw.source}: give the server's root URL without the /v1 prefix, got \`${publicUrlRaw.value}\``);
      }
    } catch {
      problems.push(
        `${publicUrlRaw.source}: expected an absolute http(s) URL without query or fragment, got \`${publicUrlRaw.value}\``,
      );
    }
  }

  const email = env.DROVER_BOOTSTRAP_EMAIL?.trim();
  const password = env.DROVER_BOOTSTRAP_PASSWORD;
  const org = env.DROVER_BOOTSTRAP_ORG?.trim() || 'default';
  let bootstrap: Config['bootstrap'] = null;
  if (email || password) {
    if (!email || !/^[^\s@]+@[^\s@]+$/.test(email)) {
      problems.push(`DROVER_BOOTSTRAP_EMAIL: expected an email address, got \`${email ?? ''}\``);
    }
    if (!password || password.length < 8) {
      problems.push('DROVER_BOOTSTRAP_PASSWORD: expected at least 8 characters');
    }
    if (org.length > 200) problems.push('DROVER_BOOTSTRAP_ORG: expected at most 200 characters');
    if (email && password) bootstrap = { email, password, org };
  }

  const readLimit = integer(
    pick(undefined, null, 'API_TOKEN_READ_RATE_LIMIT_PER_MINUTE'),
    60,
    1,
    1_000_000_000,
  );

  const logLevelRaw = pick(flags.logLevel, 'log-level', 'DROVER_LOG_LEVEL');
  let logLevel: LogLevel = 'info';
  if (logLevelRaw) {
    if ((LOG_LEVELS as readonly string[]).includes(logLevelRaw.value)) logLevel = logLevelRaw.value as LogLevel;
    else problems.push(`${logLevelRaw.source}: expected one of ${LOG_LEVELS.join(', ')}, got \`${logLevelRaw.value}\``);
  }

  const sessionTtlSeconds = integer(pick(undefined, null, 'DROVER_SESSION_TTL_SECONDS'), 12 * 3600, 60, 30 * 86400);
  const bodyLimitBytes = integer(pick(undefined, null, 'DROVER_BODY_LIMIT_BYTES'), 1024 * 1024, 1024, 64 * 1024 * 1024);

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    port,
    host,
    dataDir,
    publicUrl,
    bootstrap: bootstrap && Object.freeze(bootstrap),
    apiTokenReadRateLimitPerMinute: readLimit,
    logLevel,
    sessionTtlSeconds,
    bodyLimitBytes,
  });
}
