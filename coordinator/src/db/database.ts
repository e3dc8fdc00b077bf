import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export type Db = Database.Database;

/**
 * Opens the coordinator's SQLite file with the settings every connection needs: WAL so readers
 * never wait on the writer, synchronous=NORMAL (durable across process crashes; the last
 * transactions may roll back on power loss, see docs/decisions.md), foreign keys on, and a busy
 * timeout so a second process (the CLI's `migrate`, a backup) waits instead of failing.
 */
export function openDatabase(file: string): Db {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  return db;
}

export function databaseFile(dataDir: string): string {
  return path.join(dataDir, 'drover.sqlite');
}
