import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { redactUrlPassword } from '../../src/config/database-config.js';
import { configProblems } from './problems.js';

const problems = configProblems;

describe('DROVER_DATABASE_URL', () => {
  it('keeps the state in the SQLite file of the data directory when unset or empty', () => {
    expect(loadConfig({}).database).toEqual({ kind: 'sqlite' });
    expect(loadConfig({ DROVER_DATABASE_URL: '' }).database).toEqual({ kind: 'sqlite' });
  });

  it('reads a postgres:// or postgresql:// URL, keeping the password for the driver only', () => {
    const url = 'postgres://drover:s3cret@db.internal:5433/drover?sslmode=require&application_name=coord-1';
    expect(loadConfig({ DROVER_DATABASE_URL: url }).database).toEqual({
      kind: 'postgres',
      url,
      redactedUrl: 'postgres://drover:****@db.internal:5433/drover?sslmode=require&application_name=coord-1',
    });
    const viaFlag = loadConfig({ DROVER_DATABASE_URL: 'postgres://a@b/c' }, { databaseUrl: 'postgresql://h/d' });
    expect(viaFlag.database).toMatchObject({
      kind: 'postgres',
      url: 'postgresql://h/d',
      redactedUrl: 'postgresql://h/d',
    });
  });

  it('accepts a socket directory in place of a host name', () => {
    const database = loadConfig({ DROVER_DATABASE_URL: 'postgres:///drover?host=/run/postgresql' }).database;
    expect(database.kind).toBe('postgres');
  });

  it('names each mistake, and never echoes the password', () => {
    expect(problems({ DROVER_DATABASE_URL: 'mysql://root:hunter2@db/drover' })).toEqual([
      'DROVER_DATABASE_URL: expected postgres://<user>:<password>@<host>[:<port>]/<database> (or postgresql://), got the scheme `mysql:`',
    ]);
    expect(problems({}, { databaseUrl: 'hunter2 is not a url' })).toEqual([
      '--database-url: expected postgres://<user>:<password>@<host>[:<port>]/<database> (or postgresql://), got a value that is not a URL',
    ]);
    expect(problems({}, { databaseUrl: ' ' })[0]).toMatch(
      /^--database-url: expected postgres:\/\/.*, got an empty string$/,
    );
    const many = problems({
      DROVER_DATABASE_URL: 'postgres://u:hunter2@db:0/?sslmode=sometimes&pool=9&host=relative#frag',
    });
    expect(many).toEqual([
      'DROVER_DATABASE_URL: expected host to be the absolute path of a socket directory, got `relative`',
      'DROVER_DATABASE_URL: expected a port from 1 to 65535, got `0`',
      "DROVER_DATABASE_URL: expected the database name as the URL's path, got `postgres://u:****@db:0/?sslmode=sometimes&pool=9&host=relative#frag`",
      'DROVER_DATABASE_URL: unknown parameter `pool` (known: sslmode, sslrootcert, sslcert, sslkey, application_name, host)',
      'DROVER_DATABASE_URL: expected sslmode to be one of disable, prefer, require, no-verify, verify-ca, verify-full, got `sometimes`',
      'DROVER_DATABASE_URL: expected no fragment (#...) in the URL',
    ]);
    expect(problems({ DROVER_DATABASE_URL: 'postgres:///drover' })).toEqual([
      'DROVER_DATABASE_URL: expected a host name in the URL, got `postgres:///drover`',
    ]);
    expect(many.join()).not.toContain('hunter2');
  });

  it('redacts the password of a URL for logs', () => {
    expect(redactUrlPassword('postgres://u:p%40ss@h/d')).toBe('postgres://u:****@h/d');
    expect(redactUrlPassword('postgres://u@h/d')).toBe('postgres://u@h/d');
    expect(redactUrlPassword('not a url')).toBeNull();
  });
});
