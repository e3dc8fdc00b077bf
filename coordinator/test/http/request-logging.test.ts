import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { lazyChildLoggerFactory } from '../../src/http/request-logging.js';

function capture(level: pino.Level) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

const make = (logger: pino.Logger) =>
  lazyChildLoggerFactory.call(undefined as never, logger, { reqId: 'r1' }, {}, undefined as never) as pino.Logger;

describe('lazyChildLoggerFactory', () => {
  it('builds no child for calls at a disabled level', () => {
    const { logger, lines } = capture('warn');
    const spy = vi.spyOn(logger, 'child');
    const log = make(logger);
    log.info('not written');
    log.debug('not written');
    // What Fastify's logger validation reads on every request.
    for (const method of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'child'] as const) {
      expect(typeof log[method]).toBe('function');
    }
    expect(spy).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
  });

  it('builds the child once, on the first enabled call, with the request bindings', async () => {
    const { logger, lines } = capture('info');
    const spy = vi.spyOn(logger, 'child');
    const log = make(logger);
    log.info({ a: 1 }, 'one');
    log.warn('two');
    await new Promise((r) => setImmediate(r));
    expect(spy).toHaveBeenCalledTimes(1);
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([
      ['r1', 'one'],
      ['r1', 'two'],
    ]);
  });
});
