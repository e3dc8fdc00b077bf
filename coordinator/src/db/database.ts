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
/** The size a restarted WAL is cut back to (SQLite's journal_size_limit). */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

export function openDatabase(file: string): Db {
  if (file !== ':memory:') {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    keepPrivate(file);
  }
  const db = new Database(file);
  signalWrites(db);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  // A WAL that once grew large (a long run of writes outran its checkpoint) is cut back to this
  // when it restarts, instead of keeping its largest size on the disk for good.
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  return db;
}

/**
 * The database holds the session and URL signing keys: it is readable by its owner only,
 * whatever the umask or the mode of a data directory made by hand. SQLite gives its `-wal` and
 * `-shm` files the database file's mode; those left by an earlier run are tightened too.
 */
function keepPrivate(file: string): void {
  fs.closeSync(fs.openSync(file, 'a', 0o600));
  for (const name of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      if (fs.statSync(name).mode & 0o077) fs.chmodSync(name, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}

export function databaseFile(dataDir: string): string {
  return path.join(dataDir, 'drover.sqlite');
}

const writeListeners = new WeakMap<Db, Set<() => void>>();

/**
 * Calls `listener` right after every statement run on `db` that can write (any statement SQLite
 * does not call read-only, RETURNING included) and every `exec`, whether it succeeded or not.
 * Memory that mirrors the database (the change counter's reading, db/repositories/change-counter.ts)
 * uses it to forget what this process's own writes may have changed. Only connections made by
 * openDatabase signal. Returns a function that removes the listener.
 */
export function onWrite(db: Db, listener: () => void): () => void {
  const listeners = writeListeners.get(db);
  if (!listeners) throw new Error('onWrite: the connection was not opened by openDatabase');
  listeners.add(listener);
  return () => listeners.delete(listener);
}

type Method = (...args: unknown[]) => unknown;

/**
 * Wraps the connection's `prepare` (statements that can write get signalling `run`, `get`, `all`
 * and `iterate`) and `exec`. Transactions need nothing more: better-sqlite3 runs BEGIN and COMMIT
 * on its own statements, and the statements inside them signal.
 */
function signalWrites(db: Db): void {
  const listeners = new Set<() => void>();
  writeListeners.set(db, listeners);
  const notify = () => {
    for (const listener of listeners) listener();
  };
  const signalling =
    (method: Method): Method =>
    (...args) => {
      try {
        return method(...args);
      } finally {
        notify();
      }
    };
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    const statement = prepare(source);
    if (statement.readonly) return statement;
    const target = statement as unknown as Record<'run' | 'get' | 'all', Method> & { iterate: Method };
    for (const name of ['run', 'get', 'all'] as const) target[name] = signalling(target[name].bind(statement));
    const iterate = target.iterate.bind(statement);
    target.iterate = function* (...args: unknown[]) {
      try {
        for (const row of iterate(...args) as Iterable<unknown>) {
          notify();
          yield row;
        }
      } finally {
        notify();
      }
    };
    return statement;
  }) as Db['prepare'];
  db.exec = signalling(db.exec.bind(db) as Method) as Db['exec'];
}
