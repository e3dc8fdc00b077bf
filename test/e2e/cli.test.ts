import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../coordinator/src/db/database.js';
import { loadMigrations, migrate } from '../../coordinator/src/db/migrate.js';
import { BREAKING_NOTE } from '../../coordinator/src/db/migration-plan.js';
import { COORDINATOR_MAIN } from '../helpers/built-commands.js';
import { coordinatorCli as cli, killLeftoverCoordinators, type CoordinatorCli } from '../helpers/coordinator-cli.js';
import { makeTempDir } from '../helpers/coordinator.js';
import { ApiClient } from '../helpers/http.js';
import { eventually } from '../helpers/poll.js';
import { freePort } from '../helpers/ports.js';

/**
 * The real `drover-coordinator` command as a child process: exit codes, the start banner, signals,
 * the data directory across restarts, and what its logs never contain.
 */

const EMAIL = 'cli-owner@example.test';
const PASSWORD = 'cli password 12345';

afterEach(() => {
  expect(killLeftoverCoordinators(), 'child processes left running').toEqual([]);
});

/** Runs a command to completion. */
async function run(args: string[], env: Record<string, string> = {}) {
  const c = cli(args, env);
  const code = await c.exited;
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

/** Sends `signal` and returns the exit code and how long the process took to exit. */
async function stop(c: CoordinatorCli, signal: NodeJS.Signals = 'SIGTERM') {
  const started = Date.now();
  c.child.kill(signal);
  const code = await c.exited;
  return { code, ms: Date.now() - started };
}

const BANNER = /Drover coordinator listening on (http:\/\/127\.0\.0\.1:(\d+)) \(API: (\S+)\)/;

describe('drover-coordinator configuration errors', () => {
  // Each setting's checks and messages are coordinator/test/config's; here, that the command
  // exits 2 with them, from the environment and from the flags, in one process.
  it('exits 2 naming each bad setting, variables and flags, all at once', async () => {
    const res = await run(['start', '--port', '99999', '--log-level', 'loud', '--data-dir', makeTempDir()], {
      DROVER_LOG_FORMAT: 'yaml',
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--port: expected an integer from 0 to 65535, got `99999`');
    expect(res.stderr).toContain('--log-level: expected one of');
    expect(res.stderr).toContain('DROVER_LOG_FORMAT: expected one of json, pretty, auto, got `yaml`');
  });

  it("answers --version and a bad setting without reading the server's modules (Fastify, the databases' drivers)", () => {
    // Every module the process resolves, said on standard error as it exits.
    const record =
      'import { registerHooks } from "node:module"; const urls = [];' +
      'registerHooks({ resolve(s, c, next) { const r = next(s, c); urls.push(r.url); return r; } });' +
      'process.on("exit", () => process.stderr.write(`\\nLOADED ${JSON.stringify(urls)}\\n`));';
    for (const args of [['--version'], ['start', '--port', 'eighty']]) {
      const res = spawnSync(
        process.execPath,
        ['--import', `data:text/javascript,${encodeURIComponent(record)}`, COORDINATOR_MAIN, ...args],
        { encoding: 'utf8' },
      );
      expect(res.status, res.stderr).toBe(args.length === 1 ? 0 : 2);
      const loaded = JSON.parse(/^LOADED (.*)$/m.exec(res.stderr)![1]!) as string[];
      expect(
        loaded.some((url) => url.includes('/commander/')),
        'the hook sees the modules',
      ).toBe(true);
      expect(loaded.filter((url) => /\/(fastify|better-sqlite3|pg|pino)\//.test(url))).toEqual([]);
    }
  });

  it('exits 2 on an unknown option or command', async () => {
    const [option, command] = await Promise.all([run(['start', '--prot', '1']), run(['serve'])]);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain("unknown option '--prot'");
    expect(command.code).toBe(2);
    expect(command.stderr).toContain("unknown command 'serve'");
  });

  it('prints its version and exits 0', async () => {
    const res = await run(['--version']);
    expect(res.code).toBe(0);
    expect(res.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('drover-coordinator migrate and bootstrap', () => {
  it('migrate creates the database, prints its version, is a no-op the second time, names a breaking migration, refuses a newer one', async () => {
    const dataDir = makeTempDir();
    const first = await run(['migrate', '--data-dir', dataDir]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^applied 0001_core$/m);
    const version = first.stdout.match(/^database at version (\d+)$/m)?.[1];
    expect(Number(version)).toBeGreaterThanOrEqual(1);
    expect(first.stdout, 'a new database: no coordinator of an earlier version to warn about').not.toContain(
      'breaking',
    );
    expect(fs.existsSync(path.join(dataDir, 'drover.sqlite'))).toBe(true);

    // A data directory that does not exist is a mistyped path, not a new database to make.
    const typo = await run(['migrate', '--data-dir', path.join(dataDir, 'typo')]);
    expect([typo.code, typo.stdout]).toEqual([2, '']);
    expect(typo.stderr).toBe(
      `drover-coordinator: the data directory ${path.join(dataDir, 'typo')} does not exist: migrate works on an existing one (check --data-dir or DROVER_DATA_DIR; start creates a new one)\n`,
    );
    expect(fs.existsSync(path.join(dataDir, 'typo'))).toBe(false);

    const second = await run(['migrate', '--data-dir', dataDir]);
    expect(second.code).toBe(0);
    expect(second.stdout).not.toContain('applied');
    expect(second.stdout).toContain(`database at version ${version}`);

    // A database in use before a breaking migration: migrate says what it means when it applies it.
    const older = makeTempDir();
    const olderDb = openDatabase(path.join(older, 'drover.sqlite'));
    migrate(
      olderDb,
      loadMigrations().filter((m) => m.version < 21),
    );
    olderDb.close();
    const upgrade = await run(['migrate', '--data-dir', older]);
    expect(upgrade.stdout.startsWith(`applied 0021_job_log_cap, ${BREAKING_NOTE}\napplied 0022_`), upgrade.stdout).toBe(
      true,
    );

    // A breaking migration of a newer drover-coordinator: refused in one line naming it.
    const db = openDatabase(path.join(dataDir, 'drover.sqlite'));
    db.prepare(
      "INSERT INTO schema_migrations (version, name, applied_at, breaking) VALUES (9999, 'future', 'x', 1)",
    ).run();
    db.close();
    const refused = await run(['migrate', '--data-dir', dataDir]);
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([
      1,
      '',
      'drover-coordinator: the database has migration 9999_future of a newer drover-coordinator, a breaking change ' +
        'this one does not know: upgrade this drover-coordinator\n',
    ]);
  });

  it('bootstrap exits 2 without the bootstrap settings', async () => {
    const res = await run(['bootstrap', '--data-dir', makeTempDir()]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('DROVER_BOOTSTRAP_EMAIL');
  });

  it('bootstrap creates the owner once and refuses the second time', async () => {
    const dataDir = makeTempDir();
    const env = { DROVER_BOOTSTRAP_EMAIL: EMAIL, DROVER_BOOTSTRAP_PASSWORD: PASSWORD, DROVER_BOOTSTRAP_ORG: 'cli-org' };
    const first = await run(['bootstrap', '--data-dir', dataDir], env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`owner ${EMAIL} of organization "cli-org"`);
    expect(first.stdout + first.stderr).not.toContain(PASSWORD);

    const second = await run(['bootstrap', '--data-dir', dataDir], {
      ...env,
      DROVER_BOOTSTRAP_EMAIL: 'other@example.test',
    });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('already has users');
  });
});

describe('drover-coordinator start', () => {
  it('serves on, and stops on SIGTERM with status 0, when its stdout reader went away', async () => {
    const port = await freePort();
    const c = cli(['start', '--port', String(port), '--data-dir', makeTempDir()], {}, { closeStdout: true });
    const api = new ApiClient(`http://127.0.0.1:${port}/v1`);
    await eventually(
      async () => (await api.get('/token').catch(() => null))?.status === 401,
      20_000,
      () => `an answer; stderr: ${c.stderr()}`,
    );
    // The banner and every log line since went to a closed pipe: still serving.
    expect((await api.get('/token')).status).toBe(401);
    const { code, ms } = await stop(c);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(5000);
  });

  it('serves on the port it was given 0 for, stops on SIGTERM with status 0, and keeps its data across restarts', async () => {
    const dataDir = makeTempDir();
    const env = { DROVER_BOOTSTRAP_EMAIL: EMAIL, DROVER_BOOTSTRAP_PASSWORD: PASSWORD, DROVER_LOG_LEVEL: 'trace' };

    // First start: bootstraps, prints the real address (not port 0) and the sign-in lines.
    const first = cli(['start', '--port', '0', '--data-dir', dataDir], env);
    const [, url, port, apiBase] = await first.waitFor(BANNER);
    expect(Number(port)).toBeGreaterThan(0);
    expect(apiBase).toBe(`${url}/v1`);
    await first.waitFor(/Issue an API token/);
    expect(first.stdout()).toContain(`${url}/v1/auth/login`);
    expect(first.stdout()).toContain(`Dashboard: ${url}/\n`);
    expect(first.stdout()).not.toContain(':0/');

    const api = new ApiClient(`${url}/v1`);
    const spec = await api.get('/openapi.json');
    expect(spec.status).toBe(200);

    const wrong = await api.post('/auth/login', { body: { email: EMAIL, password: 'not the password' } });
    expect(wrong.status).toBe(401);
    const owner = await api.login(EMAIL, PASSWORD);
    const orgs = await owner.get('/orgs');
    expect(orgs.status).toBe(200);
    expect(orgs.headers.get('x-request-id')).toBeTruthy();
    // The banner's curl lines work as printed.
    const issuedTokens: string[] = [];
    for (const what of ['api-tokens', 'enrollment-tokens']) {
      const line = first
        .stdout()
        .match(new RegExp(`curl -s -X POST ${url}/v1(/orgs/\\S+/${what}) [^\\n]*\\n[^\\n]* -d '(.*)'`));
      expect(line, what).not.toBeNull();
      const issued = await owner.post(line![1]!, { body: JSON.parse(line![2]!) });
      expect(issued.status, issued.text).toBe(201);
      issuedTokens.push(issued.body.token);
    }
    const bogus = 'drv_ThisIsNotARealTokenButLooksLikeOne0123456789';
    expect((await api.get('/token', { token: bogus })).status).toBe(401);

    const keyFile = path.join(dataDir, 'server-ed25519.key');
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    const key = fs.readFileSync(keyFile, 'utf8');

    const stopped = await stop(first);
    expect(stopped.code, first.stderr()).toBe(0);
    expect(stopped.ms).toBeLessThan(5_000);
    // The last connection closed cleanly: SQLite checkpointed and removed the write-ahead log.
    expect(fs.existsSync(path.join(dataDir, 'drover.sqlite-wal'))).toBe(false);

    // The logs: JSON lines with request ids, and no credential anywhere.
    const logs = first.stdout() + first.stderr();
    const jsonLines = logs.split('\n').filter((l) => l.startsWith('{'));
    for (const line of jsonLines) expect(() => JSON.parse(line)).not.toThrow();
    const entries = jsonLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const orgsLine = entries.find((e) => e.msg === 'request completed' && e.path === '/v1/orgs');
    expect(orgsLine?.reqId).toBe(orgs.headers.get('x-request-id'));
    expect(entries.some((e) => e.msg === 'shutting down' && e.signal === 'SIGTERM')).toBe(true);
    for (const secret of [PASSWORD, 'not the password', owner.token!, bogus, ...issuedTokens]) {
      expect(logs).not.toContain(secret);
    }
    // (The banner's curl lines name the header; the log lines never do.)
    expect(jsonLines.join('\n')).not.toMatch(/authorization|bearer/i);

    // Second start on the same directory: same server key, the session from before still valid.
    const second = cli(['start', '--port', '0', '--data-dir', dataDir], env);
    const [, url2] = await second.waitFor(BANNER);
    expect(second.stdout()).not.toContain('Bootstrapped owner');
    expect(fs.readFileSync(keyFile, 'utf8')).toBe(key);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    const again = await new ApiClient(`${url2}/v1`, owner.token).get('/orgs');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(orgs.body);

    const interrupted = await stop(second, 'SIGINT');
    expect(interrupted.code, second.stderr()).toBe(0);
  });

  it('exits 1 in one line, creating nothing, when the port is taken', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as net.AddressInfo;
      const dataDir = path.join(makeTempDir(), 'data');
      const res = await run(['start', '--port', String(port), '--data-dir', dataDir]);
      expect(res.code).toBe(1);
      expect(res.stderr).toBe(
        `drover-coordinator: port ${port} on 127.0.0.1 is in use by another program; stop it or choose another port (--port, DROVER_PORT)\n`,
      );
      expect(res.stdout).toBe('');
      expect(fs.existsSync(dataDir)).toBe(false);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('exits 1 in one line when the host is not an address of this machine', async () => {
    const res = await run(['start', '--host', '192.0.2.1', '--port', '8080', '--data-dir', makeTempDir()]);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      'drover-coordinator: cannot listen on 192.0.2.1:8080: 192.0.2.1 is not an address of this machine (--host, DROVER_HOST)\n',
    );
  });
});

describe('drover-coordinator logs', () => {
  /** The lines of `text` without ANSI colours. */
  const plain = (text: string) => stripVTControlCharacters(text).split(/\r?\n/);
  const READABLE =
    /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}INFO {3}request completed {2}reqId=\S+ method=GET path=\/v1\/openapi\.json statusCode=200 ms=[\d.]+$/;

  it.skipIf(spawnSync('script', ['--version']).error !== undefined)(
    'are readable lines, in colour, on a terminal',
    async () => {
      const dataDir = makeTempDir();
      const command = [process.execPath, COORDINATOR_MAIN]
        .concat(['start', '--port', '0', '--data-dir', dataDir])
        .map((word) => `'${word}'`)
        .join(' ');
      const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DROVER_')));
      delete clean.NO_COLOR;
      // `script` runs the command on a pseudo-terminal of its own and copies what it prints.
      const terminal = spawn('script', ['-qec', command, '/dev/null'], {
        cwd: path.resolve(import.meta.dirname, '../..'),
        env: clean,
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      let out = '';
      terminal.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      const closed = new Promise((resolve) => terminal.once('close', resolve));
      try {
        const url = await vi.waitFor(() => out.match(BANNER)![1]!, { timeout: 20_000 });
        expect((await fetch(`${url}/v1/openapi.json`)).status).toBe(200);
        await vi.waitFor(() => expect(plain(out).some((l) => READABLE.test(l))).toBe(true));
        const pid = Number(fs.readFileSync(path.join(dataDir, 'coordinator.lock'), 'utf8').split('\n')[0]);
        process.kill(pid, 'SIGTERM');
        await closed;
      } finally {
        terminal.kill('SIGKILL');
      }
      expect(out).toContain('\u001b[32mINFO \u001b[39m');
      const lines = plain(out).filter(Boolean);
      expect(lines.filter((l) => l.startsWith('{'))).toEqual([]);
      expect(lines).toContainEqual(expect.stringMatching(/ {2}INFO {3}shutting down {2}signal=SIGTERM graceMs=10000$/));
    },
  );

  it('are readable lines, without colour, when piped with --log-format pretty', async () => {
    const c = cli(['start', '--port', '0', '--log-format', 'pretty', '--data-dir', makeTempDir()]);
    const [, url] = await c.waitFor(BANNER);
    expect((await fetch(`${url}/v1/openapi.json`)).status).toBe(200);
    await vi.waitFor(() => expect(plain(c.stdout()).some((l) => READABLE.test(l))).toBe(true));
    expect((await stop(c)).code).toBe(0);
    expect(c.stdout()).not.toContain('\u001b[');
    expect(plain(c.stdout()).filter((l) => l.startsWith('{'))).toEqual([]);
  });

  it('are JSON lines alone on standard output with --log-format json; the banner goes to standard error', async () => {
    const c = cli(['start', '--port', '0', '--log-format', 'json', '--data-dir', makeTempDir()]);
    const [, url] = await vi.waitFor(
      () => {
        const banner = c.stderr().match(BANNER);
        if (!banner) throw new Error(`no banner on standard error yet: ${c.stderr()}`);
        return banner;
      },
      { timeout: 20_000 },
    );
    expect((await fetch(`${url}/v1/openapi.json`)).status).toBe(200);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await stop(c)).code).toBe(0);
    const lines = c.stdout().split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    // A health check that went well is a debug line: at info, only the API's request is there.
    const paths = lines
      .map((l) => JSON.parse(l) as { msg: string; path?: string })
      .filter((e) => e.msg === 'request completed');
    expect(paths.map((e) => e.path)).toEqual(['/v1/openapi.json']);
  });
});

describe('the data directory lock', () => {
  it('refuses start, migrate and bootstrap in one line naming the pid while a coordinator uses the data directory', async () => {
    const dataDir = makeTempDir();
    const first = cli(['start', '--port', '0', '--data-dir', dataDir]);
    await first.waitFor(BANNER);
    const inUse = `drover-coordinator: the data directory ${dataDir} is in use by another drover-coordinator (pid ${first.child.pid}); stop it first\n`;
    const bootstrapEnv = { DROVER_BOOTSTRAP_EMAIL: EMAIL, DROVER_BOOTSTRAP_PASSWORD: PASSWORD };
    const [second, migrating, bootstrapping] = await Promise.all([
      run(['start', '--port', '0', '--data-dir', dataDir]),
      run(['migrate', '--data-dir', dataDir]),
      run(['bootstrap', '--data-dir', dataDir], bootstrapEnv),
    ]);
    for (const refused of [second, migrating, bootstrapping]) {
      expect(refused).toEqual({ code: 1, stdout: '', stderr: inUse });
    }

    expect((await stop(first)).code).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'coordinator.lock'))).toBe(false);
    const migrated = await run(['migrate', '--data-dir', dataDir]);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'coordinator.lock'))).toBe(false);
  });

  it('is taken over from a coordinator that was killed', async () => {
    const dataDir = makeTempDir();
    const killed = cli(['start', '--port', '0', '--data-dir', dataDir]);
    await killed.waitFor(BANNER);
    expect((await stop(killed, 'SIGKILL')).code).toBeNull();
    expect(fs.readFileSync(path.join(dataDir, 'coordinator.lock'), 'utf8')).toMatch(
      new RegExp(`^${killed.child.pid}\n`),
    );

    const next = cli(['start', '--port', '0', '--data-dir', dataDir]);
    await next.waitFor(BANNER);
    expect(fs.readFileSync(path.join(dataDir, 'coordinator.lock'), 'utf8')).toMatch(new RegExp(`^${next.child.pid}\n`));
    expect((await stop(next)).code).toBe(0);
  });

  it('says in one line what stands in its place when it is no file (a FIFO), rather than wait on it for ever', async () => {
    const dataDir = makeTempDir();
    const lock = path.join(dataDir, 'coordinator.lock');
    execFileSync('mkfifo', [lock]);
    expect(await run(['start', '--port', '0', '--data-dir', dataDir])).toEqual({
      code: 1,
      stdout: '',
      stderr: `drover-coordinator: cannot use the data directory ${dataDir}: ${lock}: it is a FIFO, not a regular file (EINVAL): remove it\n`,
    });
  });

  it('says in one line naming the lock file when a directory stands in its place', async () => {
    const dataDir = makeTempDir();
    const lock = path.join(dataDir, 'coordinator.lock');
    fs.mkdirSync(lock);
    for (const command of ['start', 'migrate']) {
      expect(await run([command, '--port', '0', '--data-dir', dataDir])).toEqual({
        code: 1,
        stdout: '',
        stderr: `drover-coordinator: cannot use the data directory ${dataDir}: ${lock}: EISDIR: illegal operation on a directory, read\n`,
      });
    }
  });

  it('refuses a data directory that is a file, or lies under one, in one line naming the setting', async () => {
    const file = path.join(makeTempDir(), 'not-a-dir');
    fs.writeFileSync(file, 'x');
    const check = '(check --data-dir or DROVER_DATA_DIR)';
    for (const command of ['start', 'migrate']) {
      expect(await run([command, '--port', '0', '--data-dir', file])).toEqual({
        code: 2,
        stdout: '',
        stderr: `drover-coordinator: the data directory ${file} is not a directory ${check}\n`,
      });
    }
    const under = path.join(file, 'data');
    expect(await run(['start', '--port', '0'], { DROVER_DATA_DIR: under })).toEqual({
      code: 2,
      stdout: '',
      stderr: `drover-coordinator: the data directory ${under} cannot be made: a part of its path is a file ${check}\n`,
    });
    expect(fs.readFileSync(file, 'utf8')).toBe('x');
  });

  it.skipIf(process.getuid?.() !== 0)(
    "run as root, refuses start, migrate, bootstrap and restore on the data directory of another user (the service's), writing nothing",
    async () => {
      // /var/lib/drover belongs to drover, as the package makes it: files root wrote there (a
      // restore's database and keys, 0600) would stop the service, which runs as drover.
      const dataDir = makeTempDir();
      fs.chownSync(dataDir, 65534, 65534); // nobody's
      const archive = path.join(makeTempDir(), 'drover.tar.gz');
      fs.writeFileSync(archive, 'x');
      const refused = (how: string) =>
        `drover-coordinator: the data directory ${dataDir} belongs to nobody, and this runs as root: the coordinator, ` +
        `running as nobody, could not read the files root would write there. Run it as nobody: ${how}; or, to run ` +
        `the coordinator as root, give root the directory first (\`chown -R root: ${dataDir}\`)\n`;
      const settings = (command: string) =>
        `with the service's settings (\`sudo systemd-run --pipe --wait --collect -p User=nobody -p EnvironmentFile=… drover-coordinator ${command}\`, docs/install.md)`;
      const bootstrapEnv = { DROVER_BOOTSTRAP_EMAIL: EMAIL, DROVER_BOOTSTRAP_PASSWORD: PASSWORD };
      expect(await run(['restore', '--from', archive, '--data-dir', dataDir])).toEqual({
        code: 2,
        stdout: '',
        stderr: refused('`sudo -u nobody drover-coordinator restore …`'),
      });
      expect(await run(['start', '--port', '0', '--data-dir', dataDir])).toEqual({
        code: 2,
        stdout: '',
        stderr: refused('start its service (`sudo systemctl start drover-coordinator`)'),
      });
      expect(await run(['migrate', '--data-dir', dataDir])).toEqual({
        code: 2,
        stdout: '',
        stderr: refused(settings('migrate')),
      });
      expect(await run(['bootstrap', '--data-dir', dataDir], bootstrapEnv)).toEqual({
        code: 2,
        stdout: '',
        stderr: refused(settings('bootstrap')),
      });
      expect(fs.readdirSync(dataDir)).toEqual([]);
      // A directory of root's own is root's to use.
      fs.chownSync(dataDir, 0, 0);
      const migrated = await run(['migrate', '--data-dir', dataDir]);
      expect(migrated.code, migrated.stderr).toBe(0);
    },
  );
});
