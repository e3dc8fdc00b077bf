import { describe, expect, it } from 'vitest';
import { FailureLog } from '../../src/util/failure-log.js';

describe('FailureLog', () => {
  it('logs the first failure of a run as an error, the next ones as debug, and the end of the run', () => {
    const lines: [string, string, object][] = [];
    const logger = {
      error: (obj: object, msg: string) => void lines.push(['error', msg, obj]),
      info: (obj: object, msg: string) => void lines.push(['info', msg, obj]),
      debug: (obj: object, msg: string) => void lines.push(['debug', msg, obj]),
    };
    let now = 1_000;
    const log = new FailureLog(logger, 'deadline sweep failed', () => now);
    log.succeeded(); // nothing to say
    const down = new Error('connect ECONNREFUSED');
    log.failed(down, { batch: 1 });
    now += 5_000;
    log.failed(down);
    now += 5_000;
    log.failed(down);
    log.succeeded();
    log.succeeded();
    log.failed(down);
    expect(lines.map(([level, msg]) => `${level} ${msg}`)).toEqual([
      'error deadline sweep failed',
      'debug deadline sweep failed',
      'debug deadline sweep failed',
      'info deadline sweep failed: works again after 3 failed turns',
      'error deadline sweep failed',
    ]);
    expect(lines[0]![2]).toEqual({ batch: 1, err: down });
    expect(lines[3]![2]).toEqual({ failures: 3, failingMs: 10_000 });
  });
});
