import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { databaseUnwritable, isDatabaseUnreachable } from '../src/database-errors.js';
import { toAppError } from '../src/http/error-handler.js';

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

describe('databaseUnwritable', () => {
  /** The error a write meets on a SQLite database opened read-only (a file system mounted read-only). */
  function readOnlyError(): Error {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-ro-'));
    const file = path.join(dir, 'ro.sqlite');
    try {
      new Database(file).exec('CREATE TABLE t (x)').close();
      const db = new Database(file, { readonly: true });
      try {
        db.exec('INSERT INTO t VALUES (1)');
      } catch (error) {
        return error as Error;
      } finally {
        db.close();
      }
      throw new Error('the write went through');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  it('answers a write the database cannot take 503 with what to fix, where it was a 500', () => {
    const readOnly = toAppError(readOnlyError());
    expect(readOnly.statusCode).toBe(503);
    expect(readOnly.retryAfter).toBe(60);
    expect(readOnly.message).toMatch(
      /^The coordinator's database cannot take writes: it is read-only \(SQLITE_READONLY\)/,
    );
    expect(toAppError(withCode('database or disk is full', 'SQLITE_FULL')).message).toBe(
      "The coordinator's database cannot take writes: its disk is full (SQLITE_FULL); try again once its operator has freed space",
    );
    // PostgreSQL: a standby after a failover, a database set read-only, a full disk.
    const standby = toAppError(
      Object.assign(withCode('cannot execute INSERT in a read-only transaction', '25006'), { severity: 'ERROR' }),
    );
    expect([standby.statusCode, standby.message]).toEqual([
      503,
      "The coordinator's database cannot take writes: it is read-only, a standby or a database set read-only (25006); try again once its operator has pointed the coordinator at a primary that takes writes",
    ]);
    expect(toAppError(withCode('could not extend file: No space left on device', '53100')).statusCode).toBe(503);
  });

  it('leaves the other errors to their answers', () => {
    expect(databaseUnwritable(withCode('UNIQUE constraint failed: t.x', 'SQLITE_CONSTRAINT_UNIQUE'))).toBeNull();
    expect(databaseUnwritable(withCode('duplicate key value violates unique constraint', '23505'))).toBeNull();
    expect(databaseUnwritable(new Error('no code'))).toBeNull();
  });
});

describe('toAppError of a client gone in the middle of its body', () => {
  it('is the end of the request (400, logged at debug), not the database unreachable (503, logged as an error)', () => {
    // Node's error when the connection closes before the body ended, as Fastify's body reader
    // hands it to the error handler.
    const aborted = Object.assign(withCode('aborted', 'ECONNRESET'), { statusCode: 400 });
    expect(toAppError(aborted)).toMatchObject({ statusCode: 400, code: 'bad_request' });
    // PostgreSQL's connection reset is still the database's.
    expect(toAppError(withCode('read ECONNRESET', 'ECONNRESET'))).toMatchObject({ statusCode: 503 });
  });
});
