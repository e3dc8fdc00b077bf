import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './database.js';

/**
 * Versioned migrations: `coordinator/migrations/NNNN_name.sql`, applied in order, each in its own
 * transaction together with its row in `schema_migrations`. A database newer than this build
 * (a migration recorded that the build does not know) refuses to start.
 */
const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 4)),
      name: file.slice(5, -4),
      sql: fs.readFileSync(new URL(file, `file://${dir.endsWith('/') ? dir : `${dir}/`}`), 'utf8'),
    }));
}

export interface MigrationResult {
  applied: Migration[];
  current: number;
}

export function migrate(db: Db, migrations = loadMigrations()): MigrationResult {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
  )`);
  const done = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version),
  );
  const known = new Set(migrations.map((m) => m.version));
  const unknown = [...done].filter((v) => !known.has(v));
  if (unknown.length > 0) {
    throw new Error(
      `The database has migrations this build does not know (${unknown.join(', ')}); run a newer drover-coordinator`,
    );
  }
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  const applied: Migration[] = [];
  for (const migration of migrations) {
    if (done.has(migration.version)) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      record.run(migration.version, migration.name, new Date().toISOString());
    })();
    applied.push(migration);
  }
  return { applied, current: Math.max(0, ...known) };
}
