import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { createLogger, logDestination, logUnwritable, type LoggerOptions } from '../src/logger.js';

/** A logger writing into memory, and the lines it wrote. */
function capture(options: LoggerOptions = {}) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  // A Writable has the write(string) pino needs; its callback form is not used.
  const logger = createLogger('debug', {
    ...options,
    destination: destination as unknown as { write(s: string): void },
  });
  return { logger, lines };
}

describe('the coordinator logger', () => {
  it('writes JSON lines by default', () => {
    const { logger, lines } = capture();
    logger.info({ reqId: 'r-1', statusCode: 200 }, 'request completed');
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 30,
      name: 'drover-coordinator',
      reqId: 'r-1',
      statusCode: 200,
      msg: 'request completed',
    });
  });

  it('writes readable lines when pretty: time, level, message, then the fields, without pid, host or name', () => {
    const { logger, lines } = capture({ format: 'pretty', color: false });
    logger.info({ reqId: 'r-1', method: 'GET', path: '/v1/orgs', statusCode: 200, ms: 5.5 }, 'request completed');
    logger.warn({ jobId: '1b2c3d4e-0000-4000-8000-000000000000', workflow: 'deploy' }, 'job past its deadline');
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}INFO {3}request completed {2}reqId=r-1 method=GET path=\/v1\/orgs statusCode=200 ms=5\.5$/,
    );
    expect(lines[1]).toMatch(/ {2}WARN {3}job …00000000 deploy: job past its deadline$/);
    expect(lines.join('\n')).not.toMatch(/pid=|hostname=|drover-coordinator|\{/);
  });

  it('redacts credentials in pretty lines as in JSON ones', () => {
    for (const format of ['json', 'pretty'] as const) {
      const { logger, lines } = capture({ format, color: false });
      logger.info({ password: 'hunter2-hunter2', headers: { authorization: 'Bearer drv_secret' } }, 'login');
      expect(lines.join('\n'), format).not.toMatch(/hunter2|drv_secret/);
      expect(lines.join('\n'), format).toContain('[redacted]');
    }
  });

  it("redacts the raw bytes of a request Node's HTTP parser refused (its headers, a body's password)", () => {
    const { logger, lines } = capture();
    const rawPacket = Buffer.from('GET /v1/orgs HTTP/1.1\r\nAuthorization: Bearer drv_secret\r\n');
    logger.debug({ err: { code: 'HPE_INVALID_HEADER_TOKEN', rawPacket } }, 'client error');
    expect(JSON.parse(lines[0]!).err).toEqual({ code: 'HPE_INVALID_HEADER_TOKEN', rawPacket: '[redacted]' });
  });

  it('prints an error with its stack under a pretty line', () => {
    const { logger, lines } = capture({ format: 'pretty', color: false });
    logger.error({ err: new Error('disk full') }, 'request failed');
    expect(lines[0]).toMatch(/ERROR {2}request failed$/);
    expect(lines[1]).toBe('    Error: disk full');
    expect(lines[2]).toMatch(/^ {8}at /);
  });

  it("says a wrapped error's reason once in a JSON line, and a cause's reason the wrapper does not hold", () => {
    const { logger, lines } = capture();
    const refused = new Error('the database has migration 0099_x of a newer drover-coordinator');
    logger.fatal(
      { err: new Error(`cannot migrate postgres://db: ${refused.message}`, { cause: refused }) },
      'could not start',
    );
    logger.error({ err: new Error('request failed', { cause: new Error('ECONNRESET') }) }, 'upload');
    expect(JSON.parse(lines[0]!).err.message).toBe(
      'cannot migrate postgres://db: the database has migration 0099_x of a newer drover-coordinator',
    );
    expect(JSON.parse(lines[0]!).err.stack).toContain('caused by: Error: the database has migration 0099_x');
    expect(JSON.parse(lines[1]!).err.message).toBe('request failed: ECONNRESET');
  });

  it('colours pretty lines only when asked', () => {
    const plain = capture({ format: 'pretty', color: false });
    const coloured = capture({ format: 'pretty', color: true });
    for (const { logger } of [plain, coloured]) logger.error('boom');
    expect(plain.lines[0]).not.toContain('\u001b[');
    expect(coloured.lines[0]).toContain('\u001b[31mERROR\u001b[39m');
  });

  it('auto is JSON when standard output is not a terminal (as under this test runner)', () => {
    expect(process.stdout.isTTY).toBeFalsy();
    const { logger, lines } = capture({ format: 'auto' });
    logger.info('hello');
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'hello' });
  });

  describe('when its log cannot be written (a full disk under a log file)', () => {
    it('goes on: lines wait up to a bound, then are dropped, nothing throws, and it is said once', () => {
      const said = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      const fd = fs.openSync('/dev/full', 'w'); // every write: ENOSPC
      try {
        const logger = createLogger('info', { destination: logDestination(fd) });
        for (let i = 0; i < 20_000; i++) logger.info({ i, padding: 'x'.repeat(1000) }, 'a line');
        expect(logUnwritable()).toBe(true);
        expect(said.mock.calls.map(([text]) => String(text))).toEqual([
          'drover-coordinator: cannot write its log (ENOSPC): lines wait, then are dropped, until it can\n',
        ]);
      } finally {
        fs.closeSync(fd);
        said.mockRestore();
      }
    });

    it('still exits on an uncaught error, instead of flushing the log for ever', () => {
      const here = path.dirname(fileURLToPath(import.meta.url));
      const script = [
        `import { createLogger } from ${JSON.stringify(path.join(here, '../src/logger.ts'))};`,
        `import { installCrashHandlers } from ${JSON.stringify(path.join(here, '../src/server.ts'))};`,
        "const logger = createLogger('info', { format: 'json' });",
        'installCrashHandlers(logger);',
        "logger.info('before');",
        "setTimeout(() => { throw new Error('boom'); }, 10);",
      ].join('\n');
      const out = fs.openSync('/dev/full', 'w');
      try {
        const child = spawnSync(
          process.execPath,
          ['--conditions=drover-source', '--import', 'tsx', '--input-type=module', '-e', script],
          { stdio: ['ignore', out, 'pipe'], timeout: 20_000, encoding: 'utf8' },
        );
        expect(child.signal, 'it hung: killed by the timeout').toBeNull();
        expect(child.status).toBe(1);
        expect(child.stderr).toContain('cannot write its log (ENOSPC)');
      } finally {
        fs.closeSync(out);
      }
    });
  });
});
