import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isLockHeldError } from '@drover/shared';
import Database from 'better-sqlite3';
import { DATA_DIR_LOCK_FILE, dataDirHolder, lockDataDir, rootInAnotherUsersDir } from '../cli/data-dir-lock.js';
import { formatBytes } from '../copy-data/report.js';
import { loadMigrations, recordedMigrations } from '../db/migrate.js';
import { NewerSchemaError, planMigrations, type RecordedMigration } from '../db/migration-plan.js';
import { DATABASE_MEMBER, InvalidBackupError, KEY_MEMBERS, type Manifest } from './archive-format.js';
import { extractBackup, ExtractWriteError } from './archive-reader.js';
import { syncDirectory } from './backup.js';
import { BackupError, failed, fsReason, refused } from './backup-error.js';
import { silentProgress, type Progress } from './progress.js';
import { STAGING } from './staging.js';

/**
 * `drover-coordinator restore` (docs/operations.md, "Backup and restore"): a backup into an empty
 * or absent data directory, under its lock (no coordinator starts on it meanwhile). The archive is
 * read whole into a staging directory inside it (`.restore-<random>`) and checked against its
 * manifest; only then are its entries renamed into place, the database last. Every file and
 * directory is synced to disk: a power cut after the command said it restored loses nothing. A
 * refusal or a failure leaves the data directory as it was (one that did not exist is removed again,
 * with the directories made above it). A database of a newer schema than this build runs on (a
 * breaking migration it does not know) is refused before anything is moved, as `start` would
 * refuse it. The staging directory of a restore that was killed is removed by the next one.
 */

export interface RestoreOptions {
  /** The archive (an absolute path). */
  from: string;
  dataDir: string;
  progress?: Progress;
}

export interface RestoreReport {
  manifest: Manifest;
  /** The blobs restored (their `.meta` sidecars aside). */
  files: number;
  bytes: number;
  seconds: number;
}

/** What a data directory may hold and still count as empty: a stale lock, a file system's own folder. */
const IGNORED = new Set([DATA_DIR_LOCK_FILE, 'lost+found']);
/** What a restore moves into the data directory before the database, which goes last. */
const MOVED_BEFORE_DATABASE: ReadonlySet<string> = new Set([...KEY_MEMBERS, 'blobs']);

export async function restore(options: RestoreOptions): Promise<RestoreReport> {
  const started = Date.now();
  const { from, dataDir } = options;
  const progress = options.progress ?? silentProgress;
  let stat: fs.Stats;
  try {
    stat = fs.statSync(from);
  } catch (error) {
    throw refused(`cannot read ${from}: ${fsReason(error)} (--from)`);
  }
  if (!stat.isFile()) throw refused(`${from} is not a file (--from)`);
  const asRoot = rootInAnotherUsersDir(dataDir, 'restore');
  if (asRoot !== null) throw refused(asRoot);
  checkEmpty(dataDir);

  // The directories the restore makes (the data directory and any missing above it, the deepest
  // first): their own entries are synced too, or a power cut could lose the whole restored
  // directory; a restore that fails removes them again.
  const made: string[] = [];
  for (let dir = path.resolve(dataDir); !fs.existsSync(dir); dir = path.dirname(dir)) made.push(dir);
  let release: () => void;
  try {
    release = lockDataDir(dataDir);
  } catch (error) {
    removeEmpty(made);
    if (isLockHeldError(error)) throw inUse(dataDir, error.pid);
    throw failed(`cannot use the data directory ${dataDir}: ${fsReason(error)}`, error);
  }
  // Inside the data directory: the same file system (the renames below), and a place the
  // service user may write to, which the directory above it (/var/lib) is not.
  const staging = path.join(dataDir, `.restore-${randomBytes(4).toString('hex')}`);
  const moved: string[] = [];
  let done = false;
  try {
    // Under the lock no other restore runs here: a staging directory is one a killed restore left.
    checkEmpty(dataDir, true);
    removeStaleStaging(dataDir, progress);
    fs.mkdirSync(staging, { mode: 0o700 });
    let bytes = 0;
    progress.step(`reading ${path.basename(from)}: starting`);
    let manifest: Manifest;
    try {
      ({ manifest } = await extractBackup(from, staging, (n) => {
        bytes += n;
        progress.update(`reading ${path.basename(from)}: ${formatBytes(bytes)} checked`);
      }));
    } catch (error) {
      if (error instanceof InvalidBackupError) throw refused(`${from} cannot be restored: ${error.message}`);
      // Not the archive's fault: a full disk under the data directory.
      if (error instanceof ExtractWriteError)
        throw failed(`cannot write into ${dataDir}: ${fsReason(error.cause)}`, error);
      throw failed(`cannot read ${from}: ${fsReason(error)}`, error);
    }
    checkSchema(from, path.join(staging, DATABASE_MEMBER));
    // The database last: a directory without it is no coordinator's yet.
    const names = fs.readdirSync(staging).sort((a, b) => Number(a === DATABASE_MEMBER) - Number(b === DATABASE_MEMBER));
    try {
      // The files were synced as they were written (archive-reader.ts); now their names, in the
      // staging directory, `blobs/` and its subdirectories (the renames below move these
      // directories as they are), before any is moved; the renames last, in the data directory.
      // No test proves a sync (that takes a power cut): the tests check what the files hold.
      syncTree(staging);
      for (const name of names) {
        // The database's rename on disk after the others', or a power cut could leave it without them.
        if (name === DATABASE_MEMBER) syncDirectory(dataDir);
        fs.renameSync(path.join(staging, name), path.join(dataDir, name));
        moved.push(name);
      }
      fs.rmdirSync(staging);
      syncDirectory(dataDir);
      for (const dir of made) syncDirectory(path.dirname(dir));
    } catch (error) {
      throw failed(`cannot restore into ${dataDir}: ${fsReason(error)}`, error);
    }
    done = true;
    return {
      manifest,
      files: manifest.members.filter((m) => m.path.startsWith('blobs/') && !m.path.endsWith('.meta')).length,
      bytes,
      seconds: (Date.now() - started) / 1000,
    };
  } catch (error) {
    if (error instanceof BackupError) throw error;
    throw failed(`cannot restore into ${dataDir}: ${fsReason(error)}`, error);
  } finally {
    progress.end();
    if (!done) {
      fs.rmSync(staging, { recursive: true, force: true });
      for (const name of moved.reverse()) fs.rmSync(path.join(dataDir, name), { recursive: true, force: true });
    }
    release();
    if (!done) removeEmpty(made);
  }
}

/**
 * Removes what restores killed midway left in the data directory, saying so: their staging
 * directories (`.restore-<random>`), and the files one stopped while it moved its files into
 * place had moved before its database (movedByStoppedRestore), those first. Only while this
 * restore holds the data directory's lock, when no other restore can be using them.
 */
function removeStaleStaging(dataDir: string, progress: Progress): void {
  let names: string[];
  try {
    names = fs.readdirSync(dataDir);
  } catch (error) {
    throw failed(`cannot read the data directory ${dataDir}: ${fsReason(error)}`, error);
  }
  const remove = (name: string) => {
    try {
      fs.rmSync(path.join(dataDir, name), { recursive: true, force: true });
    } catch (error) {
      throw failed(`cannot remove ${path.join(dataDir, name)}: ${fsReason(error)}`, error);
    }
  };
  const moved = [...movedByStoppedRestore(dataDir, names)].sort();
  for (const name of moved) remove(name);
  if (moved.length > 0) {
    progress.step(`removed ${moved.join(', ')}, moved into place by a restore that was stopped before its database`);
    progress.end(); // a line of its own, not redrawn by the next step
  }
  for (const name of names.filter((n) => isStaging(dataDir, n))) {
    remove(name);
    progress.step(`removed ${name}, the staging directory of a restore that was stopped`);
    progress.end();
  }
}

/** Whether `name` in the data directory is a restore's staging directory. */
function isStaging(dataDir: string, name: string): boolean {
  return STAGING.test(name) && fs.statSync(path.join(dataDir, name), { throwIfNoEntry: false })?.isDirectory() === true;
}

/**
 * What a restore stopped while it moved its files into place (`kill -9`, a power cut) left beside
 * its staging directory: the keys and `blobs`, moved before the database, which that directory
 * still holds. Only while the data directory holds no database: a restore went into an empty
 * directory and `start` refuses one with a staging directory (staging.ts), so these are that
 * restore's; the next restore removes them and restores whole, where it refused the directory as
 * not empty while `start` ran a new, empty coordinator on the restored server key.
 */
function movedByStoppedRestore(dataDir: string, names: readonly string[]): Set<string> {
  if (names.includes(DATABASE_MEMBER)) return new Set();
  const staged = names.some((n) => isStaging(dataDir, n) && fs.existsSync(path.join(dataDir, n, DATABASE_MEMBER)));
  return new Set(staged ? names.filter((n) => MOVED_BEFORE_DATABASE.has(n)) : []);
}

/**
 * Refuses a database that records a breaking migration this build does not know, as the migrator
 * refuses it when `start` opens it (db/migration-plan.ts): said now rather than at the first start.
 * Read-only: the staged file is left as the archive holds it.
 */
function checkSchema(from: string, file: string): void {
  if (!fs.existsSync(file)) return; // --keys-only: the database is PostgreSQL's
  let recorded: RecordedMigration[];
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      recorded = recordedMigrations(db);
    } finally {
      db.close();
    }
  } catch (error) {
    const code = String((error as { code?: unknown }).code);
    if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
      throw refused(`${from} cannot be restored: its ${DATABASE_MEMBER} is damaged (${(error as Error).message})`);
    }
    throw error;
  } finally {
    // SQLite makes these beside a database in WAL mode, read-only too; they are not the backup's.
    for (const suffix of ['-wal', '-shm']) fs.rmSync(`${file}${suffix}`, { force: true });
  }
  try {
    planMigrations(recorded, loadMigrations());
  } catch (error) {
    if (error instanceof NewerSchemaError) throw refused(`${from} cannot be restored: ${error.message}`);
    throw error;
  }
}

/** Removes the directories the restore made, the deepest first, each only while empty. */
function removeEmpty(made: readonly string[]): void {
  for (const dir of made) {
    try {
      fs.rmdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // not made after all (mkdir failed)
      return; // not empty: nor are the directories above it
    }
  }
}

/** Syncs `dir` and every directory under it, the deepest first. */
function syncTree(dir: string): void {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) syncTree(path.join(dir, entry.name));
  }
  syncDirectory(dir);
}

/** Refuses a data directory that holds anything or that a coordinator runs on; creates nothing. */
function checkEmpty(dataDir: string, lockedByUs = false): void {
  let names: string[];
  try {
    names = fs.readdirSync(dataDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code === 'ENOTDIR') throw refused(`${dataDir} is not a directory (--data-dir)`);
    throw failed(`cannot read the data directory ${dataDir}: ${fsReason(error)}`, error);
  }
  const holder = lockedByUs ? null : dataDirHolder(dataDir);
  if (holder !== null) throw inUse(dataDir, holder);
  // Not held: a staging directory is one a killed restore left, removed under the lock with what
  // that restore had moved beside it.
  const moved = movedByStoppedRestore(dataDir, names);
  const held = names.filter((name) => !IGNORED.has(name) && !isStaging(dataDir, name) && !moved.has(name)).sort();
  if (held.length > 0) {
    const shown = held.slice(0, 3).join(', ') + (held.length > 3 ? `, and ${held.length - 3} more` : '');
    throw refused(
      `the data directory ${dataDir} is not empty (it holds ${shown}): restore into an empty or new directory (--data-dir)`,
    );
  }
}

function inUse(dataDir: string, pid: number): BackupError {
  return failed(`the data directory ${dataDir} is in use by another drover-coordinator (pid ${pid}); stop it first`);
}
