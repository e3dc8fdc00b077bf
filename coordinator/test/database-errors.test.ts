import { describe, expect, it } from 'vitest';
import { isDatabaseUnreachable } from '../src/database-errors.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('isDatabaseUnreachable', () => {
  it('recognizes a server or network that is down', () => {
    expect(isDatabaseUnreachable(withCode('connect ECONNREFUSED 10.0.0.5:5432', 'ECONNREFUSED'))).toBe(true);
    expect(isDatabaseUnreachable(withCode('getaddrinfo ENOTFOUND db.internal', 'ENOTFOUND'))).toBe(true);
    expect(isDatabaseUnreachable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnreachable(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(isDatabaseUnreachable(withCode('terminating connection due to administrator command', '57P01'))).toBe(true);
    expect(isDatabaseUnreachable(withCode('the database system is starting up', '57P03'))).toBe(true);
    expect(isDatabaseUnreachable(withCode('sorry, too many clients already', '53300'))).toBe(true);
    expect(isDatabaseUnreachable(withCode('connection failure', '08006'))).toBe(true);
  });

  it('leaves a query the server refused to the other answers', () => {
    expect(isDatabaseUnreachable(withCode('duplicate key value violates unique constraint', '23505'))).toBe(false);
    expect(isDatabaseUnreachable(withCode('invalid byte sequence for encoding "UTF8": 0x00', '22021'))).toBe(false);
    expect(isDatabaseUnreachable(withCode('could not serialize access', '40001'))).toBe(false);
    expect(isDatabaseUnreachable(new Error('something else'))).toBe(false);
  });
});
