import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { loadMigrations, migrate } from '../../src/db/migrate.js';

describe('migrate', () => {
  it('applies every migration once and records its version', () => {
    const db = openDatabase(':memory:');
    const first = migrate(db);
    expect(first.applied.map((m) => m.version)).toEqual(loadMigrations().map((m) => m.version));
    expect(migrate(db).applied).toEqual([]);
    const rows = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all();
    expect(rows).toHaveLength(loadMigrations().length);
    db.close();
  });

  it('refuses a database that has a migration this build does not know', () => {
    const db = openDatabase(':memory:');
    migrate(db);
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', 'x')").run();
    expect(() => migrate(db)).toThrow(/does not know \(9999\)/);
    db.close();
  });

  it('rolls a failing migration back whole, leaving its version unrecorded', () => {
    const db = openDatabase(':memory:');
    const broken = [{ version: 1, name: 'broken', sql: 'CREATE TABLE t (x INTEGER); INSERT INTO nope VALUES (1);' }];
    expect(() => migrate(db, broken)).toThrow();
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 't'").get()).toBeUndefined();
    expect(db.prepare('SELECT COUNT(*) AS n FROM schema_migrations').get()).toEqual({ n: 0 });
    db.close();
  });

  it('leaves cron triggers made before migration 0024 without answer settings (async, no debug)', () => {
    const db = openDatabase(':memory:');
    const all = loadMigrations();
    migrate(
      db,
      all.filter((m) => m.version < 24),
    );
    const at = '2030-01-01T00:00:00.000Z';
    db.prepare("INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', ?)").run(at);
    db.prepare(
      `INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at, seq)
       VALUES ('a', 'o', 'a', 'h', 'linux', '1', 'k', 'connected', ?, 1)`,
    ).run(at);
    const insert = db.prepare(
      `INSERT INTO triggers (id, org_id, name, type, agent_id, scope_type, workflow_name, response_mode,
         response_timeout_ms, allow_debug, cron_expression, created_at, updated_at)
       VALUES (?, 'o', ?, ?, 'a', 'workflow', 'w', 'sync', 5000, 1, ?, ?, ?)`,
    );
    insert.run('c', 'nightly', 'cron', '0 3 * * *', at, at);
    insert.run('w', 'hook', 'webhook', null, at, at);
    migrate(db, all);
    const answer = db.prepare(
      'SELECT response_mode AS mode, response_timeout_ms AS wait, allow_debug AS debug FROM triggers WHERE id = ?',
    );
    expect(answer.get('c')).toEqual({ mode: 'async', wait: 30000, debug: 0 });
    expect(answer.get('w')).toEqual({ mode: 'sync', wait: 5000, debug: 1 });
    db.close();
  });

  it('opens file databases in WAL mode with foreign keys on', () => {
    const db = openDatabase(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'drover-db-')), 'x.sqlite'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    db.close();
  });
});
