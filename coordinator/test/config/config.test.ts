import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import {
  ConfigError,
  DEFAULTS,
  defaultPublicUrl,
  loadConfig,
  withListeningPort,
  type ConfigFlags,
} from '../../src/config/config.js';

const CWD = '/srv/drover';

/** The problems loadConfig reports, or [] when it accepts the input. */
function problemsOf(env: Record<string, string | undefined>, flags: ConfigFlags = {}): string[] {
  try {
    loadConfig(env, flags, CWD);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
}

describe('loadConfig defaults', () => {
  it('uses the documented default for every setting', () => {
    const config = loadConfig({}, {}, CWD);
    expect(config).toEqual({
      port: 8080,
      host: '127.0.0.1',
      dataDir: '/srv/drover/data',
      database: { kind: 'sqlite' },
      publicUrl: 'http://127.0.0.1:8080',
      bootstrap: null,
      apiTokenReadRateLimitPerMinute: 60,
      logLevel: 'info',
      logFormat: 'auto',
      sessionTtlSeconds: 43_200,
      bodyLimitBytes: 1_048_576,
      requestTimeoutMs: 30_000,
      maxConnectionsPerClient: 1024,
      databasePoolSize: 10,
      trustProxy: [],
      streamPingMs: 15_000,
      agentDisconnectGraceMs: 30_000,
      reconnectBudgetPerSecond: 1_000,
      updateStartsPerSecond: 1_000,
      listenBacklog: 4_096,
      jobDeadlineGraceMs: 60_000,
      presignTtlSeconds: 900,
      maxFileBytes: 5_368_709_120,
      fileSweepIntervalMs: 60_000,
      jobFileTtlSeconds: 604_800,
      jobLogMaxBytes: 16_777_216,
      manifestTtlSeconds: 3600,
      storage: { kind: 'disk' },
      storageAllowedHosts: new Set(),
      chat: { slack: null, discord: null },
      chatGiveUpSeconds: 86_400,
      metrics: { token: null, listen: null },
      maxTriggersPerOrg: 1000,
      maxCronTriggersPerOrg: 100,
      retention: { jobsDays: 90, failedJobsDays: 180, auditDays: 365, occurrencesDays: 30 },
      retentionSweepSeconds: 600,
      signIn: { password: true, oidc: null },
      unreadVariables: [],
    });
    expect(DEFAULTS.port).toBe(8080);
  });

  it('returns a frozen object, bootstrap settings included', () => {
    const config = loadConfig(
      { DROVER_BOOTSTRAP_EMAIL: 'a@b.test', DROVER_BOOTSTRAP_PASSWORD: 'long enough' },
      {},
      CWD,
    );
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.bootstrap)).toBe(true);
  });

  it('treats an empty environment variable as unset', () => {
    const config = loadConfig({ DROVER_PORT: '', DROVER_HOST: '', DROVER_LOG_LEVEL: '' }, {}, CWD);
    expect(config.port).toBe(8080);
    expect(config.host).toBe('127.0.0.1');
    expect(config.logLevel).toBe('info');
  });
});

describe('loadConfig from the environment', () => {
  it('reads every setting from its variable', () => {
    const config = loadConfig(
      {
        DROVER_PORT: '9090',
        DROVER_HOST: '0.0.0.0',
        DROVER_DATA_DIR: '/var/lib/drover',
        DROVER_DATABASE_URL: 'postgres://drover:pw@db:5432/drover',
        DROVER_PUBLIC_URL: 'https://drover.example.com/',
        DROVER_BOOTSTRAP_EMAIL: ' admin@example.com ',
        DROVER_BOOTSTRAP_PASSWORD: 'a password',
        DROVER_BOOTSTRAP_ORG: 'Acme',
        API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: '5',
        DROVER_LOG_LEVEL: 'DEBUG',
        DROVER_LOG_FORMAT: 'pretty',
        DROVER_SESSION_TTL_SECONDS: '3600',
        DROVER_BODY_LIMIT_BYTES: '2048',
        DROVER_REQUEST_TIMEOUT_MS: '5000',
        DROVER_MAX_CONNECTIONS_PER_CLIENT: '0',
        DROVER_DATABASE_POOL_SIZE: '4',
        DROVER_TRUST_PROXY: '10.0.0.0/8',
        DROVER_STREAM_PING_MS: '100',
        DROVER_AGENT_DISCONNECT_GRACE_MS: '0',
        DROVER_RECONNECT_BUDGET: '250',
        DROVER_UPDATE_STARTS_PER_SECOND: '40',
        DROVER_LISTEN_BACKLOG: '16384',
        DROVER_JOB_DEADLINE_GRACE_MS: '5000',
        DROVER_PRESIGN_TTL_SECONDS: '60',
        DROVER_MAX_FILE_BYTES: '1048576',
        DROVER_FILE_SWEEP_INTERVAL_MS: '50',
        DROVER_JOB_FILE_TTL_SECONDS: '3600',
        DROVER_JOB_LOG_MAX_BYTES: '65536',
        DROVER_MANIFEST_TTL_SECONDS: '600',
        DROVER_CHAT_GIVE_UP_SECONDS: '600',
        DROVER_METRICS_TOKEN: 'prometheus-scrape-token-1',
        DROVER_METRICS_LISTEN: '0.0.0.0:9464',
        DROVER_MAX_TRIGGERS_PER_ORG: '50',
        DROVER_MAX_CRON_TRIGGERS_PER_ORG: '0',
        DROVER_RETENTION_JOBS_DAYS: '7',
        DROVER_RETENTION_FAILED_JOBS_DAYS: '14',
        DROVER_RETENTION_AUDIT_DAYS: '3650',
        DROVER_RETENTION_OCCURRENCES_DAYS: '1',
        DROVER_RETENTION_SWEEP_SECONDS: '60',
        DROVER_STORAGE_ALLOWED_HOSTS: 'minio.lan:9000',
        DROVER_PASSWORD_LOGIN: 'OFF',
        DROVER_OIDC_ISSUER: 'https://id.example.com/realms/acme',
        DROVER_OIDC_CLIENT_ID: 'drover',
        DROVER_OIDC_CLIENT_SECRET: 'a-client-secret',
        DROVER_OIDC_SCOPES: 'openid email profile groups',
        DROVER_OIDC_ALLOWED_DOMAINS: 'Example.com, example.org',
        DROVER_OIDC_GROUPS_CLAIM: 'roles',
        DROVER_OIDC_ROLE_MAP:
          '{"ops": {"org": "Acme", "role": "operator"}, "auditors": {"org": "Acme", "role": "viewer"}}',
      },
      {},
      CWD,
    );
    expect(config).toEqual({
      port: 9090,
      host: '0.0.0.0',
      dataDir: '/var/lib/drover',
      database: {
        kind: 'postgres',
        url: 'postgres://drover:pw@db:5432/drover',
        redactedUrl: 'postgres://drover:****@db:5432/drover',
      },
      publicUrl: 'https://drover.example.com',
      bootstrap: { email: 'admin@example.com', password: 'a password', org: 'Acme' },
      apiTokenReadRateLimitPerMinute: 5,
      logLevel: 'debug',
      logFormat: 'pretty',
      sessionTtlSeconds: 3600,
      bodyLimitBytes: 2048,
      requestTimeoutMs: 5000,
      maxConnectionsPerClient: 0,
      databasePoolSize: 4,
      trustProxy: ['10.0.0.0/8'],
      streamPingMs: 100,
      agentDisconnectGraceMs: 0,
      reconnectBudgetPerSecond: 250,
      updateStartsPerSecond: 40,
      listenBacklog: 16_384,
      jobDeadlineGraceMs: 5000,
      presignTtlSeconds: 60,
      maxFileBytes: 1_048_576,
      fileSweepIntervalMs: 50,
      jobFileTtlSeconds: 3600,
      jobLogMaxBytes: 65_536,
      manifestTtlSeconds: 600,
      storage: { kind: 'disk' },
      storageAllowedHosts: new Set(['minio.lan:9000']),
      chat: { slack: null, discord: null },
      chatGiveUpSeconds: 600,
      metrics: { token: 'prometheus-scrape-token-1', listen: { host: '0.0.0.0', port: 9464 } },
      maxTriggersPerOrg: 50,
      maxCronTriggersPerOrg: 0,
      retention: { jobsDays: 7, failedJobsDays: 14, auditDays: 3650, occurrencesDays: 1 },
      retentionSweepSeconds: 60,
      signIn: {
        password: false,
        oidc: {
          issuer: 'https://id.example.com/realms/acme',
          clientId: 'drover',
          clientSecret: 'a-client-secret',
          scopes: 'openid email profile groups',
          allowedDomains: ['example.com', 'example.org'],
          groupsClaim: 'roles',
          roleMap: { ops: { org: 'Acme', role: 'operator' }, auditors: { org: 'Acme', role: 'viewer' } },
        },
      },
      unreadVariables: [],
    });
  });

  it('resolves a relative data directory against the working directory', () => {
    expect(loadConfig({ DROVER_DATA_DIR: 'state/db' }, {}, CWD).dataDir).toBe('/srv/drover/state/db');
  });

  it('names the bootstrap organization "default" unless told otherwise', () => {
    const config = loadConfig({ DROVER_BOOTSTRAP_EMAIL: 'a@b.test', DROVER_BOOTSTRAP_PASSWORD: '12345678' }, {}, CWD);
    expect(config.bootstrap).toEqual({ email: 'a@b.test', password: '12345678', org: 'default' });
  });

  it('keeps a public URL path and drops its trailing slashes', () => {
    expect(loadConfig({ DROVER_PUBLIC_URL: 'https://example.com/drover//' }, {}, CWD).publicUrl).toBe(
      'https://example.com/drover',
    );
  });

  it('derives the public URL from host and port when it is not set', () => {
    expect(loadConfig({ DROVER_HOST: '10.0.0.5', DROVER_PORT: '81' }, {}, CWD).publicUrl).toBe('http://10.0.0.5:81');
    // An IPv6 address in brackets, as in a URL: listened on without them.
    const v6 = loadConfig({ DROVER_HOST: '[::1]', DROVER_PORT: '81' }, {}, CWD);
    expect([v6.host, v6.publicUrl]).toEqual(['::1', 'http://[::1]:81']);
    expect(loadConfig({ DROVER_HOST: '::1' }, {}, CWD).publicUrl).toBe('http://[::1]:8080');
    expect(defaultPublicUrl('[::1]', 1)).toBe('http://[::1]:1');
  });

  it('accepts port 0 (any free port)', () => {
    expect(loadConfig({ DROVER_PORT: '0' }, {}, CWD).port).toBe(0);
  });
});

describe('loadConfig precedence', () => {
  it('prefers flags over the environment for every flag', () => {
    const config = loadConfig(
      {
        DROVER_PORT: '9090',
        DROVER_HOST: '0.0.0.0',
        DROVER_DATA_DIR: '/from/env',
        DROVER_PUBLIC_URL: 'https://env.example.com',
        DROVER_LOG_LEVEL: 'debug',
      },
      {
        port: '7070',
        host: '127.0.0.2',
        dataDir: 'from-flag',
        publicUrl: 'https://flag.example.com',
        logLevel: 'warn',
      },
      CWD,
    );
    expect(config).toMatchObject({
      port: 7070,
      host: '127.0.0.2',
      dataDir: '/srv/drover/from-flag',
      publicUrl: 'https://flag.example.com',
      logLevel: 'warn',
    });
  });

  it('uses the environment when a flag is not given', () => {
    const config = loadConfig({ DROVER_PORT: '9090' }, { host: '127.0.0.3' }, CWD);
    expect(config.port).toBe(9090);
    expect(config.host).toBe('127.0.0.3');
  });

  it('names the flag, not the variable, when the flag is the bad one', () => {
    expect(problemsOf({ DROVER_PORT: '9090' }, { port: 'http' })).toEqual([
      '--port: expected an integer from 0 to 65535, got `http`',
    ]);
  });
});

describe('loadConfig validation', () => {
  it.each([
    ['DROVER_PORT', 'abc', 'DROVER_PORT: expected an integer from 0 to 65535, got `abc`'],
    ['DROVER_PORT', '65536', 'DROVER_PORT: expected an integer from 0 to 65535, got `65536`'],
    ['DROVER_PORT', '-1', 'DROVER_PORT: expected an integer from 0 to 65535, got `-1`'],
    ['DROVER_PORT', '80.5', 'DROVER_PORT: expected an integer from 0 to 65535, got `80.5`'],
    ['DROVER_PORT', '1e3', 'DROVER_PORT: expected an integer from 0 to 65535, got `1e3`'],
    [
      'DROVER_CHAT_GIVE_UP_SECONDS',
      '59',
      'DROVER_CHAT_GIVE_UP_SECONDS: expected an integer from 60 to 604800, got `59`',
    ],
    ['DROVER_HOST', 'exa mple', 'DROVER_HOST: expected a host name or IP address, got `exa mple`'],
    ['DROVER_HOST', 'host/path', 'DROVER_HOST: expected a host name or IP address, got `host/path`'],
    ['DROVER_DATA_DIR', '   ', 'DROVER_DATA_DIR: expected a directory path, got an empty string'],
    [
      'DROVER_PUBLIC_URL',
      'not a url',
      'DROVER_PUBLIC_URL: expected an absolute http(s) URL without credentials, query or fragment, got `not a url`',
    ],
    [
      'DROVER_PUBLIC_URL',
      'https://admin:hunter2@drover.example.com',
      'DROVER_PUBLIC_URL: expected an absolute http(s) URL without credentials, query or fragment, got `https://admin:****@drover.example.com/`',
    ],
    [
      'DROVER_PUBLIC_URL',
      'ftp://example.com',
      'DROVER_PUBLIC_URL: expected an absolute http(s) URL without credentials, query or fragment, got `ftp://example.com`',
    ],
    [
      'DROVER_PUBLIC_URL',
      'https://example.com/?a=1',
      'DROVER_PUBLIC_URL: expected an absolute http(s) URL without credentials, query or fragment, got `https://example.com/?a=1`',
    ],
    [
      'DROVER_PUBLIC_URL',
      'https://example.com/#top',
      'DROVER_PUBLIC_URL: expected an absolute http(s) URL without credentials, query or fragment, got `https://example.com/#top`',
    ],
    [
      'DROVER_PUBLIC_URL',
      'https://user:pw@example.com',
      'DROVER_PUBLIC_URL: expected an absolute http(s) URL without credentials, query or fragment, got `https://user:****@example.com/`',
    ],
    [
      'DROVER_PUBLIC_URL',
      'https://example.com/v1/',
      "DROVER_PUBLIC_URL: expected the server's root URL without the /v1 suffix, got `https://example.com/v1/`",
    ],
    [
      'API_TOKEN_READ_RATE_LIMIT_PER_MINUTE',
      '0',
      'API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: expected an integer from 1 to 1000000000, got `0`',
    ],
    [
      'API_TOKEN_READ_RATE_LIMIT_PER_MINUTE',
      'lots',
      'API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: expected an integer from 1 to 1000000000, got `lots`',
    ],
    [
      'DROVER_LOG_LEVEL',
      'verbose',
      'DROVER_LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent, got `verbose`',
    ],
    [
      'DROVER_SESSION_TTL_SECONDS',
      '59',
      'DROVER_SESSION_TTL_SECONDS: expected an integer from 60 to 2592000, got `59`',
    ],
    [
      'DROVER_SESSION_TTL_SECONDS',
      '2592001',
      'DROVER_SESSION_TTL_SECONDS: expected an integer from 60 to 2592000, got `2592001`',
    ],
    [
      'DROVER_BODY_LIMIT_BYTES',
      '1023',
      'DROVER_BODY_LIMIT_BYTES: expected an integer from 1024 to 67108864, got `1023`',
    ],
    ['DROVER_BODY_LIMIT_BYTES', '1mb', 'DROVER_BODY_LIMIT_BYTES: expected an integer from 1024 to 67108864, got `1mb`'],
    ['DROVER_REQUEST_TIMEOUT_MS', '99', 'DROVER_REQUEST_TIMEOUT_MS: expected an integer from 100 to 3600000, got `99`'],
    [
      'DROVER_MAX_CONNECTIONS_PER_CLIENT',
      '-1',
      'DROVER_MAX_CONNECTIONS_PER_CLIENT: expected an integer from 0 to 1000000, got `-1`',
    ],
    ['DROVER_DATABASE_POOL_SIZE', '0', 'DROVER_DATABASE_POOL_SIZE: expected an integer from 1 to 1000, got `0`'],
    ['DROVER_STREAM_PING_MS', '99', 'DROVER_STREAM_PING_MS: expected an integer from 100 to 30000, got `99`'],
    // Agents drop a stream silent for 45 s: a slower ping would have every one reconnect.
    ['DROVER_STREAM_PING_MS', '60000', 'DROVER_STREAM_PING_MS: expected an integer from 100 to 30000, got `60000`'],
    [
      'DROVER_AGENT_DISCONNECT_GRACE_MS',
      '-1',
      'DROVER_AGENT_DISCONNECT_GRACE_MS: expected an integer from 0 to 86400000, got `-1`',
    ],
    [
      'DROVER_JOB_DEADLINE_GRACE_MS',
      '1m',
      'DROVER_JOB_DEADLINE_GRACE_MS: expected an integer from 0 to 86400000, got `1m`',
    ],
    [
      'DROVER_JOB_LOG_MAX_BYTES',
      '65535',
      'DROVER_JOB_LOG_MAX_BYTES: expected an integer from 65536 to 1073741824, got `65535`',
    ],
    [
      'DROVER_JOB_LOG_MAX_BYTES',
      '16MiB',
      'DROVER_JOB_LOG_MAX_BYTES: expected an integer from 65536 to 1073741824, got `16MiB`',
    ],
    [
      'DROVER_MANIFEST_TTL_SECONDS',
      '59',
      'DROVER_MANIFEST_TTL_SECONDS: expected an integer from 60 to 604800, got `59`',
    ],
    [
      'DROVER_MANIFEST_TTL_SECONDS',
      '1h',
      'DROVER_MANIFEST_TTL_SECONDS: expected an integer from 60 to 604800, got `1h`',
    ],
    [
      'DROVER_MAX_TRIGGERS_PER_ORG',
      '-1',
      'DROVER_MAX_TRIGGERS_PER_ORG: expected an integer from 0 to 1000000, got `-1`',
    ],
    ['DROVER_RETENTION_JOBS_DAYS', '0', 'DROVER_RETENTION_JOBS_DAYS: expected an integer from 1 to 3650, got `0`'],
    [
      'DROVER_RETENTION_FAILED_JOBS_DAYS',
      '1.5',
      'DROVER_RETENTION_FAILED_JOBS_DAYS: expected an integer from 1 to 3650, got `1.5`',
    ],
    [
      'DROVER_RETENTION_SWEEP_SECONDS',
      '0',
      'DROVER_RETENTION_SWEEP_SECONDS: expected an integer from 1 to 86400, got `0`',
    ],
    [
      'DROVER_MAX_CRON_TRIGGERS_PER_ORG',
      'many',
      'DROVER_MAX_CRON_TRIGGERS_PER_ORG: expected an integer from 0 to 1000000, got `many`',
    ],
  ])('refuses %s=%j naming the variable', (name, value, message) => {
    expect(problemsOf({ [name]: value })).toEqual([message]);
  });

  it.each([
    ['port', 'x', '--port: expected an integer from 0 to 65535, got `x`'],
    ['host', 'a b', '--host: expected a host name or IP address, got `a b`'],
    ['host', '', '--host: expected a host name or IP address, got ``'],
    ['dataDir', '', '--data-dir: expected a directory path, got an empty string'],
    [
      'publicUrl',
      '/relative',
      '--public-url: expected an absolute http(s) URL without credentials, query or fragment, got `/relative`',
    ],
    ['logLevel', 'loud', '--log-level: expected one of fatal, error, warn, info, debug, trace, silent, got `loud`'],
  ] as const)('refuses the flag %s=%j naming the flag', (flag, value, message) => {
    expect(problemsOf({}, { [flag]: value })).toEqual([message]);
  });

  it('refuses a bootstrap email without a password and the reverse', () => {
    expect(problemsOf({ DROVER_BOOTSTRAP_EMAIL: 'a@b.test' })).toEqual([
      'DROVER_BOOTSTRAP_PASSWORD: expected a password when DROVER_BOOTSTRAP_EMAIL is set, got nothing',
    ]);
    expect(problemsOf({ DROVER_BOOTSTRAP_PASSWORD: 'long enough' })).toEqual([
      'DROVER_BOOTSTRAP_EMAIL: expected an email address when DROVER_BOOTSTRAP_PASSWORD is set, got nothing',
    ]);
  });

  it('refuses a bootstrap email that is not an address', () => {
    expect(problemsOf({ DROVER_BOOTSTRAP_EMAIL: 'admin', DROVER_BOOTSTRAP_PASSWORD: 'long enough' })).toEqual([
      'DROVER_BOOTSTRAP_EMAIL: expected an email address, got `admin`',
    ]);
    const long = `${'a'.repeat(320)}@b.test`;
    expect(problemsOf({ DROVER_BOOTSTRAP_EMAIL: long, DROVER_BOOTSTRAP_PASSWORD: 'long enough' })).toEqual([
      `DROVER_BOOTSTRAP_EMAIL: expected an email address, got \`${long}\``,
    ]);
  });

  it('refuses a short or overlong bootstrap password without echoing it', () => {
    const short = problemsOf({ DROVER_BOOTSTRAP_EMAIL: 'a@b.test', DROVER_BOOTSTRAP_PASSWORD: 's3cr3t' });
    expect(short).toEqual(['DROVER_BOOTSTRAP_PASSWORD: expected 8 to 1024 characters, got 6']);
    expect(short.join()).not.toContain('s3cr3t');
    expect(problemsOf({ DROVER_BOOTSTRAP_EMAIL: 'a@b.test', DROVER_BOOTSTRAP_PASSWORD: 'x'.repeat(1025) })).toEqual([
      'DROVER_BOOTSTRAP_PASSWORD: expected 8 to 1024 characters, got 1025',
    ]);
  });

  it('holds the bootstrap organization name to the rules of an organization name through the API', () => {
    const orgProblems = (name: string) =>
      problemsOf({
        DROVER_BOOTSTRAP_EMAIL: 'a@b.test',
        DROVER_BOOTSTRAP_PASSWORD: 'long enough',
        DROVER_BOOTSTRAP_ORG: name,
      });
    // POST /v1/orgs takes 255 characters: so does the first organization.
    expect(orgProblems('o'.repeat(255))).toEqual([]);
    expect(orgProblems('o'.repeat(256))).toEqual(['DROVER_BOOTSTRAP_ORG: must be at most 255 characters, got 256']);
    expect(orgProblems('Acme\tLabs')).toEqual(['DROVER_BOOTSTRAP_ORG: must not contain control characters']);
    expect(orgProblems('Acme \u202egpj.exe')).toEqual([
      expect.stringMatching(
        /^DROVER_BOOTSTRAP_ORG: must not contain bidirectional formatting characters .*, got U\+202E$/,
      ),
    ]);
  });

  it('reports every problem at once, in one error whose message lists them', () => {
    let error: unknown;
    try {
      loadConfig({ DROVER_PORT: 'x', DROVER_LOG_LEVEL: 'loud', DROVER_BODY_LIMIT_BYTES: '1' }, {}, CWD);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const configError = error as ConfigError;
    expect(configError.code).toBe('invalid_config');
    expect(configError.problems).toHaveLength(3);
    expect(configError.message).toBe(
      [
        'Invalid configuration:',
        '  - DROVER_PORT: expected an integer from 0 to 65535, got `x`',
        '  - DROVER_LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent, got `loud`',
        '  - DROVER_BODY_LIMIT_BYTES: expected an integer from 1024 to 67108864, got `1`',
      ].join('\n'),
    );
  });

  it('accepts integers written with surrounding spaces', () => {
    expect(loadConfig({ DROVER_PORT: ' 8081 ' }, {}, CWD).port).toBe(8081);
  });
});

describe('sign-in settings', () => {
  const OIDC = { DROVER_OIDC_ISSUER: 'https://id.example.com', DROVER_OIDC_CLIENT_ID: 'drover' };

  it('takes a public client (no secret) with the default scopes and groups claim; http only on the loopback', () => {
    expect(loadConfig(OIDC, {}, CWD).signIn.oidc).toEqual({
      issuer: 'https://id.example.com',
      clientId: 'drover',
      clientSecret: null,
      scopes: 'openid email profile',
      allowedDomains: [],
      groupsClaim: 'groups',
      roleMap: {},
    });
    expect(loadConfig({ ...OIDC, DROVER_OIDC_ISSUER: 'http://127.0.0.1:9000' }, {}, CWD).signIn.oidc?.issuer).toBe(
      'http://127.0.0.1:9000',
    );
    expect(problemsOf({ ...OIDC, DROVER_OIDC_ISSUER: 'http://id.example.com' })).toEqual([
      'DROVER_OIDC_ISSUER: expected the https URL of the OpenID provider (its issuer) without credentials, query or fragment (http only on the loopback), got `http://id.example.com`',
    ]);
    expect(problemsOf({ ...OIDC, DROVER_OIDC_ISSUER: 'https://proxy:hunter2@id.example.com/realms/acme' })).toEqual([
      'DROVER_OIDC_ISSUER: expected the https URL of the OpenID provider (its issuer) without credentials, query or fragment (http only on the loopback), got `https://proxy:****@id.example.com/realms/acme`',
    ]);
  });

  it('refuses each setting that is wrong, saying what was expected, without echoing secrets', () => {
    expect(problemsOf({ DROVER_OIDC_CLIENT_ID: 'x', DROVER_OIDC_ROLE_MAP: '{}' })).toEqual([
      'DROVER_OIDC_ISSUER: required when DROVER_OIDC_CLIENT_ID, DROVER_OIDC_ROLE_MAP are set',
    ]);
    expect(
      problemsOf({
        DROVER_OIDC_ISSUER: 'not a url',
        DROVER_OIDC_CLIENT_SECRET: 'two words',
        DROVER_OIDC_SCOPES: 'profile',
        DROVER_OIDC_ALLOWED_DOMAINS: 'example.com,@bad',
        DROVER_OIDC_GROUPS_CLAIM: 'has space',
        DROVER_OIDC_ROLE_MAP:
          '{"ops": {"org": "Acme", "role": "admin"}, "x": {"org": ""}, "y": {"org": "A", "role": "viewer", "z": 1}}',
        DROVER_PASSWORD_LOGIN: 'maybe',
      }),
    ).toEqual([
      'DROVER_PASSWORD_LOGIN: expected on or off, got `maybe`',
      'DROVER_OIDC_ISSUER: expected the https URL of the OpenID provider (its issuer), got `not a url`',
      'DROVER_OIDC_CLIENT_ID: required when DROVER_OIDC_ISSUER is set',
      'DROVER_OIDC_CLIENT_SECRET: expected one word of at most 1024 characters',
      'DROVER_OIDC_SCOPES: expected space-separated scopes including openid, got `profile`',
      'DROVER_OIDC_SCOPES: expected space-separated scopes including email, got `profile`',
      'DROVER_OIDC_ALLOWED_DOMAINS: expected comma-separated email domains, got `@bad`',
      'DROVER_OIDC_GROUPS_CLAIM: expected a claim name (letters, digits, _ : . / -), got `has space`',
      'DROVER_OIDC_ROLE_MAP: group "ops": expected "role" to be one of owner, operator, member, viewer, got "admin"',
      'DROVER_OIDC_ROLE_MAP: group "x": expected "org", an organization\'s id (or its name)',
      'DROVER_OIDC_ROLE_MAP: group "y": unknown field "z"',
    ]);
    expect(problemsOf({ ...OIDC, DROVER_OIDC_ROLE_MAP: '[1]' })).toEqual([
      'DROVER_OIDC_ROLE_MAP: expected a JSON object {"<group>": {"org": "<organization id or name>", "role": "owner|operator|member|viewer"}}',
    ]);
  });

  it('maps a group named as a property of every object only when the map names it', () => {
    const { roleMap } = loadConfig(
      { ...OIDC, DROVER_OIDC_ROLE_MAP: '{"__proto__": {"org": "Acme", "role": "viewer"}}' },
      {},
      CWD,
    ).signIn.oidc!;
    expect(Object.keys(roleMap)).toEqual(['__proto__']);
    expect(roleMap['__proto__']).toEqual({ org: 'Acme', role: 'viewer' });
    for (const group of ['constructor', 'toString', 'hasOwnProperty']) expect(roleMap[group]).toBeUndefined();
  });

  it('turns passwords off only beside single sign-on', () => {
    expect(problemsOf({ DROVER_PASSWORD_LOGIN: 'off' })).toEqual([
      'DROVER_PASSWORD_LOGIN: off needs single sign-on (DROVER_OIDC_ISSUER and DROVER_OIDC_CLIENT_ID), or nobody could sign in',
    ]);
    expect(loadConfig({ ...OIDC, DROVER_PASSWORD_LOGIN: 'off' }, {}, CWD).signIn.password).toBe(false);
  });
});

describe('storage settings', () => {
  it('reads the hosts of its own networks that bindings may use: none by default, a list, or any', () => {
    expect(loadConfig({}, {}, CWD).storageAllowedHosts).toEqual(new Set());
    expect(
      loadConfig({ DROVER_STORAGE_ALLOWED_HOSTS: 'MinIO.lan, 10.0.0.5:9000,[::1]:9000,127.1' }, {}, CWD)
        .storageAllowedHosts,
    ).toEqual(new Set(['minio.lan', '10.0.0.5:9000', '[::1]:9000', '127.0.0.1']));
    expect(loadConfig({ DROVER_STORAGE_ALLOWED_HOSTS: '*' }, {}, CWD).storageAllowedHosts).toBe('any');
    expect(problemsOf({ DROVER_STORAGE_ALLOWED_HOSTS: 'http://minio.lan,a:99999,,ok' })).toEqual([
      'DROVER_STORAGE_ALLOWED_HOSTS: expected * or a comma-separated list of host or host:port (an IPv6 address in brackets), got `http://minio.lan`',
      'DROVER_STORAGE_ALLOWED_HOSTS: expected * or a comma-separated list of host or host:port (an IPv6 address in brackets), got `a:99999`',
      'DROVER_STORAGE_ALLOWED_HOSTS: expected * or a comma-separated list of host or host:port (an IPv6 address in brackets), got ``',
    ]);
  });
});

describe('metrics settings', () => {
  const TOKEN = 'a-metrics-token-of-32-characters';

  it('reads the token and the listen address, the flag winning over the variable', () => {
    const config = loadConfig(
      { DROVER_METRICS_TOKEN: TOKEN, DROVER_METRICS_LISTEN: '127.0.0.1:9464' },
      { metricsListen: '[::1]:9465' },
      CWD,
    );
    expect(config.metrics).toEqual({ token: TOKEN, listen: { host: '::1', port: 9465 } });
    expect(loadConfig({ DROVER_METRICS_LISTEN: ' 10.0.0.5:9464 ' }, {}, CWD).metrics).toEqual({
      token: null,
      listen: { host: '10.0.0.5', port: 9464 },
    });
    expect(Object.isFrozen(config.metrics)).toBe(true);
  });

  it('refuses a short token, or one that cannot be sent in a header, without echoing it', () => {
    const short = problemsOf({ DROVER_METRICS_TOKEN: 'tooshort' });
    expect(short).toEqual(['DROVER_METRICS_TOKEN: expected 16 to 1024 characters, got 8']);
    const spaced = problemsOf({ DROVER_METRICS_TOKEN: 'has a space in the middle of it' });
    expect(spaced).toEqual(['DROVER_METRICS_TOKEN: expected printable ASCII without spaces, got other characters']);
    for (const problem of [...short, ...spaced]) expect(problem).not.toMatch(/tooshort|has a space/);
  });

  it('refuses a listen address that is not host:port, or is the API address', () => {
    for (const bad of ['9464', 'localhost', ':9464', 'host:99999', '::1:9464', '[not-ipv6]:9464', 'a b:1']) {
      expect(problemsOf({ DROVER_METRICS_LISTEN: bad }), bad).toEqual([
        `DROVER_METRICS_LISTEN: expected host:port (an IPv6 address in brackets: [::1]:9464), got \`${bad}\``,
      ]);
    }
    // The API's address under another name, or every address (the API listens on 127.0.0.1:8080).
    for (const same of ['127.0.0.1:8080', 'localhost:8080', 'LOCALHOST:8080', '0.0.0.0:8080', '[::]:8080']) {
      expect(problemsOf({}, { metricsListen: same }), same).toEqual([
        `--metrics-listen: expected an address other than the API's (--host, --port), got \`${same}\``,
      ]);
    }
    for (const other of ['127.0.0.1:9464', '[::1]:8080', '10.0.0.5:8080']) {
      expect(problemsOf({}, { metricsListen: other }), other).toEqual([]);
    }
  });
});

describe('withListeningPort', () => {
  it('puts the bound port into a derived public URL when port 0 was asked', () => {
    const config = withListeningPort(loadConfig({}, { port: '0' }, CWD), 41234);
    expect(config.port).toBe(41234);
    expect(config.publicUrl).toBe('http://127.0.0.1:41234');
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('leaves a configured public URL and a fixed port alone', () => {
    const configured = loadConfig({ DROVER_PUBLIC_URL: 'https://example.com' }, { port: '0' }, CWD);
    expect(withListeningPort(configured, 41234)).toBe(configured);
    const fixed = loadConfig({}, { port: '8081' }, CWD);
    expect(withListeningPort(fixed, 8081)).toBe(fixed);
  });
});

describe('variables no setting reads', () => {
  it('are said, with the setting a misspelt one was meant to be, leaving out the other programs', () => {
    const config = loadConfig(
      {
        DROVER_JOB_LOG_MAX_BYTE: '1048576',
        DROVER_SLACK_SIGNING_SECRT: 'x',
        DROVER_SOMETHING_ELSE: '1',
        DROVER_TOKEN: 'drv_x', // drover's
        DROVER_AGENT_STATE_DIR: '/var/lib/drover-agent', // drover-agent's
        DROVER_PARAM_TARGET: 'eu', // a step's
        DROVER_PORT: '9000',
        HOME: '/root',
      },
      {},
      CWD,
    );
    expect(config.unreadVariables).toEqual([
      'DROVER_JOB_LOG_MAX_BYTE is set but is not a setting of drover-coordinator; it is ignored (did you mean DROVER_JOB_LOG_MAX_BYTES?)',
      'DROVER_SLACK_SIGNING_SECRT is set but is not a setting of drover-coordinator; it is ignored (did you mean DROVER_SLACK_SIGNING_SECRET?)',
      'DROVER_SOMETHING_ELSE is set but is not a setting of drover-coordinator; it is ignored',
    ]);
  });

  it('never include a setting the documentation names, whatever else is set', () => {
    const docs = path.join(import.meta.dirname, '../../../docs');
    const named = new Set<string>();
    for (const file of fs.readdirSync(docs).filter((f) => f.endsWith('.md'))) {
      for (const [name] of fs.readFileSync(path.join(docs, file), 'utf8').matchAll(/DROVER_[A-Z0-9_]*[A-Z0-9]/g)) {
        named.add(name);
      }
    }
    // Names the documentation gives to other things: build and test variables, examples of a CI
    // script's own, an inner variable of the agent, prefixes (`DROVER_PARAM_<NAME>`), and the
    // misspelt setting of the warning's example.
    const others = [
      'DROVER_BOOTSTRAP',
      'DROVER_BUCKET_ENDPOINT',
      'DROVER_CHROMIUM',
      'DROVER_CLI_URL',
      'DROVER_DEPLOY_TRIGGER',
      'DROVER_DOCS_SCREENSHOTS',
      'DROVER_JOB_LOG_MAX_BYTE',
      'DROVER_NODE_MAJOR',
      'DROVER_NODE_VERSION',
      'DROVER_PACKAGE_MAINTAINER',
      'DROVER_PARAM',
      'DROVER_RETENTION',
      'DROVER_SPARE_GATE',
      'DROVER_TEST_DATABASE',
    ];
    const env = Object.fromEntries([...named].map((name) => [name, '']));
    const unread = loadConfig(env, {}, CWD).unreadVariables.map((warning) => warning.split(' ')[0]);
    expect(unread).toEqual(others.filter((name) => named.has(name)));
  });
});
