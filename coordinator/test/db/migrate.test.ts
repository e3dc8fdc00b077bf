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

  it('opens file databases in WAL mode with foreign keys on', () => {
    const db = openDatabase(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'drover-db-')), 'x.sqlite'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    db.close();
  });
});
