import path from 'node:path';
import { DEFAULT_JOB_LOG_MAX_BYTES, MAX_JOB_LOG_MAX_BYTES, MIN_JOB_LOG_MAX_BYTES } from '../domain/jobs/job-logs.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../domain/auth/passwords.js';
import { isEmailAddress } from '../domain/emails.js';
import { nameProblem } from '../domain/names.js';
import {
  DEFAULT_RETENTION,
  MAX_RETENTION_DAYS,
  MIN_RETENTION_DAYS,
  RETENTION_ENV,
  RETENTION_FIELDS,
  type Retention,
} from '../domain/retention/retention-settings.js';
import { parseChatConfig, type ChatConfig } from './chat-config.js';
import { parseSignInConfig, type SignInConfig } from './sign-in-config.js';
import { parseDatabaseUrl, shownUrl, type DatabaseConfig } from './database-config.js';
import { parseStorageAllowedHosts, parseStorageUrl, type StorageConfig } from './storage-config.js';
import type { AllowedHosts } from '../domain/model/storage-bindings.js';
import { parseMetricsConfig, type MetricsConfig } from './metrics-config.js';
import { parseTrustProxy } from './trust-proxy-config.js';
import { unreadVariables } from './unread-variables.js';

/**
 * The coordinator's configuration (docs/operations.md): flags, then environment, then defaults,
 * validated once at start with messages that name the setting, then frozen and passed in.
 * Nothing reads process.env anywhere else.
 */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** Where the state is kept: the SQLite file in the data directory, or a PostgreSQL database. */
  readonly database: DatabaseConfig;
  /** On PostgreSQL, the connections the coordinator's pool opens at most (its event connection aside). */
  readonly databasePoolSize: number;
  /** Without trailing slash; `{base_url}` is `${publicUrl}/v1`. */
  readonly publicUrl: string;
  readonly bootstrap: {
    readonly email: string;
    readonly password: string;
    readonly org: string;
    /**
     * The password as the coordinator stores it (`hashPassword`), made beforehand by a program
     * that starts many coordinators with one owner (the tests: each hash costs 0.1-0.25 s of CPU);
     * never read from the environment. Absent, the bootstrap hashes `password`.
     */
    readonly passwordHash?: string;
  } | null;
  readonly apiTokenReadRateLimitPerMinute: number;
  readonly logLevel: LogLevel;
  /** `json` lines, `pretty` (readable) lines, or `auto`: pretty on a terminal, JSON otherwise. */
  readonly logFormat: LogFormat;
  readonly sessionTtlSeconds: number;
  readonly bodyLimitBytes: number;
  /** A request's headers, and its body (a file upload: each stretch without data), must arrive within this. */
  readonly requestTimeoutMs: number;
  /** Connections one client address may hold open at once; 0: no limit. */
  readonly maxConnectionsPerClient: number;
  /**
   * The load balancers whose `X-Forwarded-For` names the client (addresses, CIDR ranges,
   * `loopback`...; config/trust-proxy-config.ts); empty: the connection's peer is the client.
   */
  readonly trustProxy: readonly string[];
  /** How often the agent stream sends a `ping` event (and refreshes the agent's lastSeenAt). */
  readonly streamPingMs: number;
  /** How long after its stream drops an agent that has not reconnected becomes `disconnected`. */
  readonly agentDisconnectGraceMs: number;
  /** Agent streams opened per second at most; the rest are shed with 503 and `Retry-After`. */
  readonly reconnectBudgetPerSecond: number;
  /** Update jobs a large publish has the fleet start per second (their `deploy` events' `startWithinMs`). */
  readonly updateStartsPerSecond: number;
  /** The listen socket's backlog (connections accepted by the kernel, not yet by the server). */
  readonly listenBacklog: number;
  /** Added to a job's timeout to make its deadline, past which the sweeper fails it. */
  readonly jobDeadlineGraceMs: number;
  /** Lifetime of presigned upload and download URLs (`expiresInSeconds`). */
  readonly presignTtlSeconds: number;
  /** The largest file an upload may carry. */
  readonly maxFileBytes: number;
  /** How often the file sweeper deletes expired files and retries failed deletions. */
  readonly fileSweepIntervalMs: number;
  /** The TTL of the files agents upload as job outputs. */
  readonly jobFileTtlSeconds: number;
  /** A job's stored log is capped at this many bytes of text (docs/jobs.md, "Log lines"). */
  readonly jobLogMaxBytes: number;
  /** How long a signed OTA manifest entry is valid after it is issued (`expires_at`; docs/ota.md). */
  readonly manifestTtlSeconds: number;
  /** Where the coordinator's own files are kept: the data directory, or a bucket. */
  readonly storage: StorageConfig;
  /** The hosts of its own networks organizations' `s3` bindings may reach (storage/endpoint-guard.ts). */
  readonly storageAllowedHosts: AllowedHosts;
  /** Slack and Discord app credentials; null: that provider is off. */
  readonly chat: ChatConfig;
  /** How long a chat message (a job's notification) is retried before it is given up. */
  readonly chatGiveUpSeconds: number;
  /** `GET /metrics` (docs/metrics.md): its bearer token and its own unauthenticated address; both null: off. */
  readonly metrics: MetricsConfig;
  /** The most triggers an organization may have (not deleted, of every kind). */
  readonly maxTriggersPerOrg: number;
  /** The most enabled cron triggers an organization may have. */
  readonly maxCronTriggersPerOrg: number;
  /** What organizations keep, in days, unless an owner sets their own (docs/operations.md, "Retention"). */
  readonly retention: Readonly<Retention>;
  /** How often the retention sweep runs (the first within a minute of start). */
  readonly retentionSweepSeconds: number;
  /** How people sign in: passwords, single sign-on, or both (docs/sso.md). */
  readonly signIn: SignInConfig;
  /**
   * A warning for each `DROVER_*` variable of the environment that no setting reads (a misspelt
   * one, most often), said at start (config/unread-variables.ts).
   */
  readonly unreadVariables: readonly string[];
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'pretty', 'auto'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export const DEFAULTS = Object.freeze({
  port: 8080,
  host: '127.0.0.1',
  dataDir: './data',
  bootstrapOrg: 'default',
  apiTokenReadRateLimitPerMinute: 60,
  logLevel: 'info' as LogLevel,
  logFormat: 'auto' as LogFormat,
  sessionTtlSeconds: 12 * 3600,
  bodyLimitBytes: 1024 * 1024,
  requestTimeoutMs: 30_000,
  maxConnectionsPerClient: 1024,
  databasePoolSize: 10,
  streamPingMs: 15_000,
  agentDisconnectGraceMs: 30_000,
  reconnectBudgetPerSecond: 1_000,
  updateStartsPerSecond: 1_000,
  listenBacklog: 4_096,
  jobDeadlineGraceMs: 60_000,
  presignTtlSeconds: 900,
  maxFileBytes: 5 * 1024 ** 3,
  fileSweepIntervalMs: 60_000,
  jobFileTtlSeconds: 7 * 86400,
  jobLogMaxBytes: DEFAULT_JOB_LOG_MAX_BYTES,
  manifestTtlSeconds: 3600,
  chatGiveUpSeconds: 86400,
  maxTriggersPerOrg: 1000,
  maxCronTriggersPerOrg: 100,
  retentionSweepSeconds: 600,
});

/** Options as the CLI hands them over (strings, or undefined when the flag was not given). */
export interface ConfigFlags {
  port?: string | undefined;
  host?: string | undefined;
  dataDir?: string | undefined;
  databaseUrl?: string | undefined;
  publicUrl?: string | undefined;
  storageUrl?: string | undefined;
  logLevel?: string | undefined;
  logFormat?: string | undefined;
  metricsListen?: string | undefined;
}

export class ConfigError extends Error {
  readonly code = 'invalid_config';
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Env = Record<string, string | undefined>;

/** A raw setting and where it came from (`--port` or `DROVER_PORT`), for messages. */
interface Raw {
  value: string;
  source: string;
}

const HOST = /^[A-Za-z0-9.:[\]-]+$/;

/** `http://<host>:<port>`, with brackets around an IPv6 address. */
export function defaultPublicUrl(host: string, port: number): string {
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
}

export function loadConfig(given: Env, flags: ConfigFlags = {}, cwd = process.cwd()): Config {
  const problems: string[] = [];
  // Every variable looked up is recorded: those set but never looked up are said at start.
  const read = new Set<string>();
  const env = new Proxy(given, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return target[name as string];
    },
  });
  const pick = (flag: string | undefined, flagName: string | null, envName: string): Raw | undefined => {
    if (flag !== undefined) return { value: flag, source: `--${flagName}` };
    const fromEnv = env[envName];
    if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, source: envName };
    return undefined;
  };
  const integer = (raw: Raw | undefined, fallback: number, min: number, max: number): number => {
    if (!raw) return fallback;
    const text = raw.value.trim();
    const n = /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      problems.push(`${raw.source}: expected an integer from ${min} to ${max}, got \`${raw.value}\``);
      return fallback;
    }
    return n;
  };

  const port = integer(pick(flags.port, 'port', 'DROVER_PORT'), DEFAULTS.port, 0, 65535);

  const hostRaw = pick(flags.host, 'host', 'DROVER_HOST');
  // An IPv6 address may come in brackets, as in a URL (`[::1]`): listened on without them.
  const host = hostRaw ? hostRaw.value.trim().replace(/^\[([^\]]*)\]$/, '$1') : DEFAULTS.host;
  if (hostRaw && !HOST.test(host)) {
    problems.push(`${hostRaw.source}: expected a host name or IP address, got \`${hostRaw.value}\``);
  }

  const dataDirRaw = pick(flags.dataDir, 'data-dir', 'DROVER_DATA_DIR');
  if (dataDirRaw && dataDirRaw.value.trim() === '') {
    problems.push(`${dataDirRaw.source}: expected a directory path, got an empty string`);
  }
  const dataDir = path.resolve(cwd, dataDirRaw?.value.trim() || DEFAULTS.dataDir);

  const database = parseDatabaseUrl(pick(flags.databaseUrl, 'database-url', 'DROVER_DATABASE_URL'), problems);
  const databasePoolSize = integer(
    pick(undefined, null, 'DROVER_DATABASE_POOL_SIZE'),
    DEFAULTS.databasePoolSize,
    1,
    1000,
  );

  const publicUrlRaw = pick(flags.publicUrl, 'public-url', 'DROVER_PUBLIC_URL');
  const publicUrl = publicUrlRaw ? parsePublicUrl(publicUrlRaw, problems) : defaultPublicUrl(host, port);

  const bootstrap = parseBootstrap(env, problems);

  const apiTokenReadRateLimitPerMinute = integer(
    pick(undefined, null, 'API_TOKEN_READ_RATE_LIMIT_PER_MINUTE'),
    DEFAULTS.apiTokenReadRateLimitPerMinute,
    1,
    1_000_000_000,
  );

  const logLevelRaw = pick(flags.logLevel, 'log-level', 'DROVER_LOG_LEVEL');
  let logLevel: LogLevel = DEFAULTS.logLevel;
  if (logLevelRaw) {
    const wanted = logLevelRaw.value.trim().toLowerCase();
    if ((LOG_LEVELS as readonly string[]).includes(wanted)) logLevel = wanted as LogLevel;
    else problems.push(`${logLevelRaw.source}: expected one of ${LOG_LEVELS.join(', ')}, got \`${logLevelRaw.value}\``);
  }
  const logFormatRaw = pick(flags.logFormat, 'log-format', 'DROVER_LOG_FORMAT');
  let logFormat: LogFormat = DEFAULTS.logFormat;
  if (logFormatRaw) {
    const wanted = logFormatRaw.value.trim().toLowerCase();
    if ((LOG_FORMATS as readonly string[]).includes(wanted)) logFormat = wanted as LogFormat;
    else
      problems.push(`${logFormatRaw.source}: expected one of ${LOG_FORMATS.join(', ')}, got \`${logFormatRaw.value}\``);
  }

  const sessionTtlSeconds = integer(
    pick(undefined, null, 'DROVER_SESSION_TTL_SECONDS'),
    DEFAULTS.sessionTtlSeconds,
    60,
    30 * 86400,
  );
  const bodyLimitBytes = integer(
    pick(undefined, null, 'DROVER_BODY_LIMIT_BYTES'),
    DEFAULTS.bodyLimitBytes,
    1024,
    64 * 1024 * 1024,
  );
  const requestTimeoutMs = integer(
    pick(undefined, null, 'DROVER_REQUEST_TIMEOUT_MS'),
    DEFAULTS.requestTimeoutMs,
    100,
    3_600_000,
  );
  const maxConnectionsPerClient = integer(
    pick(undefined, null, 'DROVER_MAX_CONNECTIONS_PER_CLIENT'),
    DEFAULTS.maxConnectionsPerClient,
    0,
    1_000_000,
  );

  // At most 30 s: an agent drops a stream it heard nothing on for 45 s, and reconnects.
  const streamPingMs = integer(pick(undefined, null, 'DROVER_STREAM_PING_MS'), DEFAULTS.streamPingMs, 100, 30_000);
  const agentDisconnectGraceMs = integer(
    pick(undefined, null, 'DROVER_AGENT_DISCONNECT_GRACE_MS'),
    DEFAULTS.agentDisconnectGraceMs,
    0,
    86_400_000,
  );
  const reconnectBudgetPerSecond = integer(
    pick(undefined, null, 'DROVER_RECONNECT_BUDGET'),
    DEFAULTS.reconnectBudgetPerSecond,
    1,
    1_000_000,
  );
  const updateStartsPerSecond = integer(
    pick(undefined, null, 'DROVER_UPDATE_STARTS_PER_SECOND'),
    DEFAULTS.updateStartsPerSecond,
    1,
    1_000_000,
  );
  const listenBacklog = integer(pick(undefined, null, 'DROVER_LISTEN_BACKLOG'), DEFAULTS.listenBacklog, 1, 1_000_000);
  const jobDeadlineGraceMs = integer(
    pick(undefined, null, 'DROVER_JOB_DEADLINE_GRACE_MS'),
    DEFAULTS.jobDeadlineGraceMs,
    0,
    86_400_000,
  );

  const presignTtlSeconds = integer(
    pick(undefined, null, 'DROVER_PRESIGN_TTL_SECONDS'),
    DEFAULTS.presignTtlSeconds,
    1,
    604_800,
  );
  const maxFileBytes = integer(
    pick(undefined, null, 'DROVER_MAX_FILE_BYTES'),
    DEFAULTS.maxFileBytes,
    1,
    Number.MAX_SAFE_INTEGER,
  );
  const fileSweepIntervalMs = integer(
    pick(undefined, null, 'DROVER_FILE_SWEEP_INTERVAL_MS'),
    DEFAULTS.fileSweepIntervalMs,
    50,
    86_400_000,
  );
  const jobFileTtlSeconds = integer(
    pick(undefined, null, 'DROVER_JOB_FILE_TTL_SECONDS'),
    DEFAULTS.jobFileTtlSeconds,
    60,
    90 * 86400,
  );

  const jobLogMaxBytes = integer(
    pick(undefined, null, 'DROVER_JOB_LOG_MAX_BYTES'),
    DEFAULTS.jobLogMaxBytes,
    MIN_JOB_LOG_MAX_BYTES,
    MAX_JOB_LOG_MAX_BYTES,
  );

  // At least a minute (an agent's clock is corrected to the coordinator's within seconds), at most a week.
  const manifestTtlSeconds = integer(
    pick(undefined, null, 'DROVER_MANIFEST_TTL_SECONDS'),
    DEFAULTS.manifestTtlSeconds,
    60,
    7 * 86400,
  );

  const storage = parseStorageUrl(pick(flags.storageUrl, 'storage-url', 'DROVER_STORAGE_URL'), env, problems);
  const storageAllowedHosts = parseStorageAllowedHosts(pick(undefined, null, 'DROVER_STORAGE_ALLOWED_HOSTS'), problems);

  const chat = parseChatConfig(env, problems);
  const chatGiveUpSeconds = integer(
    pick(undefined, null, 'DROVER_CHAT_GIVE_UP_SECONDS'),
    DEFAULTS.chatGiveUpSeconds,
    60,
    7 * 86400,
  );

  const maxTriggersPerOrg = integer(
    pick(undefined, null, 'DROVER_MAX_TRIGGERS_PER_ORG'),
    DEFAULTS.maxTriggersPerOrg,
    0,
    1_000_000,
  );
  const maxCronTriggersPerOrg = integer(
    pick(undefined, null, 'DROVER_MAX_CRON_TRIGGERS_PER_ORG'),
    DEFAULTS.maxCronTriggersPerOrg,
    0,
    1_000_000,
  );

  const retention = Object.freeze(
    Object.fromEntries(
      RETENTION_FIELDS.map((field) => [
        field,
        integer(
          pick(undefined, null, RETENTION_ENV[field]),
          DEFAULT_RETENTION[field],
          MIN_RETENTION_DAYS,
          MAX_RETENTION_DAYS,
        ),
      ]),
    ) as unknown as Retention,
  );
  const retentionSweepSeconds = integer(
    pick(undefined, null, 'DROVER_RETENTION_SWEEP_SECONDS'),
    DEFAULTS.retentionSweepSeconds,
    1,
    86_400,
  );

  const trustProxy = parseTrustProxy(pick(undefined, null, 'DROVER_TRUST_PROXY'), problems);
  const signIn = parseSignInConfig(env, problems);

  const metrics = parseMetricsConfig(
    env,
    pick(flags.metricsListen, 'metrics-listen', 'DROVER_METRICS_LISTEN'),
    { host, port },
    problems,
  );

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    port,
    host,
    dataDir,
    database,
    databasePoolSize,
    publicUrl,
    bootstrap,
    apiTokenReadRateLimitPerMinute,
    logLevel,
    logFormat,
    sessionTtlSeconds,
    bodyLimitBytes,
    requestTimeoutMs,
    maxConnectionsPerClient,
    trustProxy,
    streamPingMs,
    agentDisconnectGraceMs,
    reconnectBudgetPerSecond,
    updateStartsPerSecond,
    listenBacklog,
    jobDeadlineGraceMs,
    presignTtlSeconds,
    maxFileBytes,
    fileSweepIntervalMs,
    jobFileTtlSeconds,
    jobLogMaxBytes,
    manifestTtlSeconds,
    storage,
    storageAllowedHosts,
    chat,
    chatGiveUpSeconds,
    metrics,
    maxTriggersPerOrg,
    maxCronTriggersPerOrg,
    retention,
    retentionSweepSeconds,
    signIn,
    unreadVariables: unreadVariables(given, read),
  });
}

function parsePublicUrl(raw: Raw, problems: string[]): string {
  const expected = `${raw.source}: expected an absolute http(s) URL without credentials, query or fragment`;
  let url: URL;
  try {
    url = new URL(raw.value.trim());
  } catch {
    problems.push(`${expected}, got \`${raw.value}\``);
    return '';
  }
  if (
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.username ||
    url.password ||
    url.search ||
    url.hash
  ) {
    // Its password is not repeated (the message goes to the journal).
    problems.push(`${expected}, got \`${shownUrl(raw.value.trim())}\``);
    return '';
  }
  const publicUrl = url.toString().replace(/\/+$/, '');
  if (/\/v1$/.test(publicUrl)) {
    problems.push(`${raw.source}: expected the server's root URL without the /v1 suffix, got \`${raw.value}\``);
  }
  return publicUrl;
}

function parseBootstrap(env: Env, problems: string[]): Config['bootstrap'] {
  const email = env.DROVER_BOOTSTRAP_EMAIL?.trim() ?? '';
  const password = env.DROVER_BOOTSTRAP_PASSWORD ?? '';
  const org = env.DROVER_BOOTSTRAP_ORG?.trim() || DEFAULTS.bootstrapOrg;
  if (!email && !password) return null;
  const before = problems.length;
  if (!email) {
    problems.push(
      'DROVER_BOOTSTRAP_EMAIL: expected an email address when DROVER_BOOTSTRAP_PASSWORD is set, got nothing',
    );
  } else if (!isEmailAddress(email)) {
    problems.push(`DROVER_BOOTSTRAP_EMAIL: expected an email address, got \`${email}\``);
  }
  if (!password) {
    problems.push('DROVER_BOOTSTRAP_PASSWORD: expected a password when DROVER_BOOTSTRAP_EMAIL is set, got nothing');
  } else if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    // The password itself is never echoed.
    problems.push(
      `DROVER_BOOTSTRAP_PASSWORD: expected ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters, got ${password.length}`,
    );
  }
  // The rules of an organization's name through the API (POST /v1/orgs), so that the first one
  // is no exception: at most 255 characters, no control or bidirectional formatting characters.
  const orgProblem = nameProblem(org);
  if (orgProblem) problems.push(`DROVER_BOOTSTRAP_ORG: ${orgProblem}`);
  return problems.length > before ? null : Object.freeze({ email, password, org });
}

/**
 * The configuration once the server listens: with `port` 0 and no configured public URL, the
 * port actually bound replaces 0 in both `port` and `publicUrl`. Otherwise `config` unchanged.
 */
export function withListeningPort(config: Config, boundPort: number): Config {
  if (config.port !== 0 || config.publicUrl !== defaultPublicUrl(config.host, 0)) return config;
  return Object.freeze({ ...config, port: boundPort, publicUrl: defaultPublicUrl(config.host, boundPort) });
}
