import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAgentLogger } from '../../src/logging/create-logger.js';
import { KnownSecrets } from '../../src/workflows/known-secrets.js';

let stateDir: string;
beforeEach(() => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-logger-'));
});
afterEach(() => {
  vi.restoreAllMocks();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

const records = () =>
  fs
    .readFileSync(path.join(stateDir, 'logs', 'agent.log'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('createAgentLogger', () => {
  it('writes pino JSON lines to <state-dir>/logs/agent.log, private to the agent', () => {
    const logger = createAgentLogger({ stateDir, level: 'info' });
    logger.info('agent started');
    logger.debug('not at this level');
    logger.child({ jobId: 'a1b2c3d4-0000-4000-8000-000000000000', workflow: 'deploy' }).warn({ step: 2 }, 'slow step');
    expect(records()).toEqual([
      { level: 30, time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), pid: process.pid, msg: 'agent started' },
      {
        level: 40,
        time: expect.any(String),
        pid: process.pid,
        jobId: 'a1b2c3d4-0000-4000-8000-000000000000',
        workflow: 'deploy',
        step: 2,
        msg: 'slow step',
      },
    ]);
    expect(fs.statSync(path.join(stateDir, 'logs')).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(stateDir, 'logs', 'agent.log')).mode & 0o777).toBe(0o600);
  });

  it("says a wrapped error's reason once, as the wrapper already holds it", () => {
    const logger = createAgentLogger({ stateDir, level: 'info' });
    const cause = new Error('connection refused');
    logger.error({ err: new Error(`cannot reach http://c.test: ${cause.message}`, { cause }) }, 'stream');
    expect(records()[0]).toMatchObject({ err: { message: 'cannot reach http://c.test: connection refused' } });
  });

  it('redacts fields named secret* or token, in the line and in child bindings, at any depth', () => {
    const logger = createAgentLogger({ stateDir, level: 'info' });
    logger.info({ token: 'drv_abc', secretValue: 'hunter2', nested: { secrets: { A: 'b' }, ok: 1 } }, 'hello');
    logger.child({ Secret: 'child-secret' }).info('from a child');
    const text = fs.readFileSync(path.join(stateDir, 'logs', 'agent.log'), 'utf8');
    for (const leaked of ['drv_abc', 'hunter2', 'child-secret', '"A":"b"']) expect(text).not.toContain(leaked);
    expect(records()[0]).toMatchObject({
      token: '[redacted]',
      secretValue: '[redacted]',
      nested: { secrets: '[redacted]', ok: 1 },
    });
    expect(records()[1]).toMatchObject({ Secret: '[redacted]' });
  });

  it('masks secret values wherever they appear in a line, as JSON writes them, and keeps every line JSON', () => {
    const secrets = new KnownSecrets(stateDir);
    secrets.remember(['hunter2', 'a"quo\\ted', '0123', 'nfoo']);
    const logger = createAgentLogger({ stateDir, level: 'info', secrets });
    logger.child({ workflow: 'ship-hunter2' }).info({ file: '/x/hunter2.yaml', n: 1230123 }, 'pw a"quo\\ted, hunter2');
    logger.info({ ['key_hunter2']: true }, 'line\nfoo 0123'); // `\nfoo` in JSON is not the secret nfoo
    const text = fs.readFileSync(path.join(stateDir, 'logs', 'agent.log'), 'utf8');
    for (const leaked of ['hunter2', 'quo']) expect(text).not.toContain(leaked);
    expect(records()).toEqual([
      expect.objectContaining({ workflow: 'ship-***', file: '/x/***.yaml', n: 1230123, msg: 'pw ***, ***' }),
      expect.objectContaining({ ['key_***']: true, msg: 'line\nfoo ***' }),
    ]);
  });

  it('also prints readable lines on standard output when asked', () => {
    const written: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const logger = createAgentLogger({ stateDir, level: 'info', stdout: true, color: false });
    logger
      .child({ jobId: '1b2c3d4e-0000-4000-8000-000000000000', workflow: 'deploy' })
      .error('step 2 (build) exited with code 3');
    vi.restoreAllMocks();
    expect(written).toEqual([
      expect.stringMatching(
        /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}ERROR {2}job …00000000 deploy: step 2 \(build\) exited with code 3\n$/,
      ),
    ]);
    expect(records()).toHaveLength(1);
  });

  it('says once on standard error why its file cannot be written, and logs there until it can again', () => {
    const stderr: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr.push(String(chunk));
      return true;
    });
    const logger = createAgentLogger({ stateDir, level: 'info', color: false });
    logger.info('before');
    const write = fs.writeSync;
    const readOnly = vi.spyOn(fs, 'writeSync').mockImplementation(() => {
      throw Object.assign(new Error('EROFS: read-only file system, write'), { code: 'EROFS', syscall: 'write' });
    });
    logger
      .child({ jobId: '1b2c3d4e-0000-4000-8000-000000000000', workflow: 'deploy' })
      .error('step 2 exited with code 3');
    logger.warn('again');
    readOnly.mockImplementation(write); // remounted read-write
    logger.info('after');
    vi.restoreAllMocks();

    const file = path.join(stateDir, 'logs', 'agent.log');
    expect(stderr).toEqual([
      `drover-agent: cannot write its log ${file}: the file system is read-only (EROFS); its lines go to standard error until it can\n`,
      expect.stringMatching(
        /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}ERROR {2}job …00000000 deploy: step 2 exited with code 3\n$/,
      ),
      expect.stringMatching(/ {2}WARN {3}again\n$/),
    ]);
    expect(records().map((r) => [r.level, r.msg])).toEqual([
      [30, 'before'],
      [
        40,
        `the agent's log ${file} can be written again; 2 lines before this one went to standard error (journalctl -u drover-agent)`,
      ],
      [30, 'after'],
    ]);
  });

  it('rotates by size, keeping the configured number of files', () => {
    const logger = createAgentLogger({ stateDir, level: 'info', maxBytes: 1000, maxFiles: 3 });
    for (let i = 0; i < 100; i++) logger.info({ i }, 'a line of about a hundred bytes with its time and pid');
    expect(fs.readdirSync(path.join(stateDir, 'logs')).sort()).toEqual(['agent.log', 'agent.log.1', 'agent.log.2']);
    const last = records().at(-1);
    expect(last).toMatchObject({ i: 99 });
  });
});
