import fs from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import { localBlobs, type BackupConfig } from '../config/backup-config.js';
import { readDataDirKeys } from '../copy-data/data-dir-keys.js';
import { formatBytes } from '../copy-data/report.js';
import { SqliteSource } from '../db/copy/sqlite-source.js';
import { databaseFile } from '../db/database.js';
import { loadMigrations } from '../db/migrate.js';
import { createPool } from '../db/postgres/pool.js';
import { createServerSecretRepository } from '../db/repositories/server-secrets.js';
import { PostgresDatabase } from '../db/sql/postgres.js';
import { SECRETS_KEY_FILE, SECRETS_KEY_SECRET } from '../domain/secrets/secret-box.js';
import { SERVER_KEY_FILE, SERVER_KEY_SECRET } from '../domain/secrets/server-key.js';
import { COORDINATOR_VERSION } from '../version.js';
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  DATABASE_MEMBER,
  HEADER_MEMBER,
  MANIFEST_MEMBER,
  type ArchiveMember,
  type BackupHeader,
  type BlobsInBackup,
  type Manifest,
} from './archive-format.js';
import { ArchiveWriter } from './archive-writer.js';
import { failed, fsReason, refused } from './backup-error.js';
import { silentProgress, type Progress } from './progress.js';

/**
 * `drover-coordinator backup` (docs/operations.md, "Backup and restore"): a consistent copy of a
 * coordinator's data while it runs, without its data directory's lock. The database first, with
 * SQLite's online backup API (a snapshot); then the blobs the snapshot's `files` rows reference,
 * each opened before it is read (a blob the coordinator deletes meanwhile is still read whole;
 * one already gone is counted, not fatal; blobs written after the snapshot belong to rows it does
 * not have and are not needed). The archive is written beside `<file>` to a file named after the
 * process (`.drover-backup-<pid>.partial`, mode 0600: it holds the keys), synced, and renamed to
 * `<file>` only when complete; what a killed backup left there is removed by the next one.
 */

export interface BackupOptions {
  config: BackupConfig;
  /** The archive to write (an absolute path). */
  to: string;
  /** Replace `to` when it exists. */
  force?: boolean;
  /** Leave the local storage backend's blobs out. */
  withoutBlobs?: boolean;
  /** Only the two keys (on PostgreSQL, what pg_dump's dump needs beside it). */
  keysOnly?: boolean;
  progress?: Progress;
  /** Between the snapshot and the copy of the blobs (tests). */
  afterSnapshot?: () => void | Promise<void>;
}

export interface BackupReport {
  file: string;
  /** The archive's size. */
  bytes: number;
  database: { schemaVersion: number; bytes: number } | null;
  /** The key files in the archive. */
  keys: string[];
  blobs: BlobsInBackup;
  /** With `blobs: 'included'`: the blobs copied, their bytes, and the files whose blob was gone. */
  files: { copied: number; bytes: number; vanished: number };
  seconds: number;
}

/**
 * The files a backup writes beside its target until it is complete (the archive, the database
 * snapshot and SQLite's journal of it), named after the process so that the next backup knows
 * whether their writer still runs, whatever target either was given.
 */
const TEMP_PREFIX = '.drover-backup-';
const TEMP_FILE = /^\.drover-backup-(\d+)\.partial/;

const KEY_FILES: Record<string, string> = {
  [SERVER_KEY_SECRET]: SERVER_KEY_FILE,
  [SECRETS_KEY_SECRET]: SECRETS_KEY_FILE,
};

export async function backup(options: BackupOptions): Promise<BackupReport> {
  const started = Date.now();
  const { config } = options;
  const progress = options.progress ?? silentProgress;
  const keysOnly = options.keysOnly === true;
  if (config.database.kind === 'postgres' && !keysOnly) {
    // Files kept in the data directory are in neither pg_dump's dump nor --keys-only's archive.
    const files = config.storage.kind === 'disk' ? `, then the files in ${localBlobs(config)} with tar` : '';
    throw refused(
      `the coordinator keeps its state in PostgreSQL (${config.database.redactedUrl}): back the database up with pg_dump, and the server's keys with drover-coordinator backup --keys-only${files}`,
    );
  }
  checkTarget(options.to, options.force === true, config.dataDir);
  const dbFile = databaseFile(config.dataDir);
  if (config.database.kind === 'sqlite') checkDataDir(config.dataDir, dbFile, keysOnly);

  const dir = path.dirname(options.to);
  removeLeftovers(dir);
  const partial = path.join(dir, `${TEMP_PREFIX}${process.pid}.partial`);
  const snapshot = `${partial}-snapshot.sqlite`;
  const out = await openPrivate(partial, options.to);
  let complete = false;
  let writer: ArchiveWriter | null = null;
  try {
    const createdAt = new Date();
    let database: BackupReport['database'] = null;
    if (!keysOnly) {
      progress.step('snapshot of the database: starting');
      await snapshotDatabase(dbFile, snapshot, progress);
      database = { schemaVersion: prepareSnapshot(snapshot), bytes: fs.statSync(snapshot).size };
    }
    await options.afterSnapshot?.();
    const keys = await readKeys(config, keysOnly);
    const blobs: BlobsInBackup =
      keysOnly || options.withoutBlobs ? 'left out' : config.storage.kind === 's3' ? 'in the bucket' : 'included';

    writer = new ArchiveWriter(out);
    const header: BackupHeader = {
      format: BACKUP_FORMAT,
      formatVersion: BACKUP_FORMAT_VERSION,
      coordinatorVersion: COORDINATOR_VERSION,
      createdAt: createdAt.toISOString(),
    };
    await writer.bufferMember(HEADER_MEMBER, json(header), createdAt);
    const members: ArchiveMember[] = [];
    if (database) {
      const handle = await fsp.open(snapshot, 'r');
      try {
        members.push(await writer.fileMember(DATABASE_MEMBER, handle, database.bytes, createdAt));
      } finally {
        await handle.close();
      }
    }
    for (const key of keys) members.push(await writer.bufferMember(key.file, Buffer.from(`${key.value}\n`), createdAt));
    const files = { copied: 0, bytes: 0, vanished: 0 };
    if (blobs === 'included') {
      progress.step('copying files: starting');
      await copyBlobs(writer, snapshot, localBlobs(config), members, files, progress);
    }
    const manifest: Manifest = {
      ...header,
      database: config.database.kind,
      schemaVersion: database?.schemaVersion ?? null,
      blobs,
      members,
    };
    await writer.bufferMember(MANIFEST_MEMBER, json(manifest), createdAt);
    progress.step('writing the archive: finishing');
    await writer.finish(); // closes `out`
    fs.renameSync(partial, options.to);
    syncDirectory(path.dirname(options.to));
    complete = true;
    return {
      file: options.to,
      bytes: fs.statSync(options.to).size,
      database,
      keys: keys.map((k) => k.file),
      blobs,
      files,
      seconds: (Date.now() - started) / 1000,
    };
  } catch (error) {
    if ((error as Error).name === 'BackupError') throw error;
    throw failed(`backup failed, ${options.to} was not written: ${fsReason(error)}`, error);
  } finally {
    progress.end();
    if (!complete) {
      if (writer) await writer.abandon();
      else await out.close().catch(() => undefined);
      fs.rmSync(partial, { force: true });
    }
    for (const file of [snapshot, `${snapshot}-wal`, `${snapshot}-shm`, `${snapshot}-journal`]) {
      fs.rmSync(file, { force: true });
    }
  }
}

/**
 * Refuses a target in the data directory (even with `force`: `--to <data dir>/drover.sqlite`
 * would replace the live database), one that exists (without `force`), is a directory, or whose
 * directory does not exist.
 */
function checkTarget(to: string, force: boolean, dataDir: string): void {
  const dir = path.dirname(to);
  if (inDataDir(to, dataDir)) {
    throw refused(`${to} is in the data directory ${dataDir}: write the backup outside it (--to)`);
  }
  let stat: fs.Stats | null = null;
  try {
    stat = fs.statSync(to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw failed(`cannot write ${to}: ${fsReason(error)}`);
  }
  if (stat?.isDirectory()) throw refused(`${to} is a directory: name the backup file (--to)`);
  if (stat && !force) throw refused(`${to} already exists: pass --force to replace it`);
  if (!fs.existsSync(dir)) throw refused(`cannot write ${to}: the directory ${dir} does not exist`);
}

/**
 * Whether the target, once symbolic links are resolved, is in the data directory: where the
 * archive is renamed to (its directory's real path), or the file it names through a link.
 */
function inDataDir(to: string, dataDir: string): boolean {
  const data = realPath(dataDir);
  if (data === null) return false; // none yet (PostgreSQL): nothing in it to replace
  const dir = realPath(path.dirname(to));
  const places = [realPath(to), dir === null ? null : path.join(dir, path.basename(to))];
  return places.some((place) => {
    if (place === null) return false;
    const relative = path.relative(data, place);
    return (
      relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
    );
  });
}

function realPath(file: string): string | null {
  try {
    return fs.realpathSync(file);
  } catch {
    return null; // absent: the checks after it say why
  }
}

/**
 * Removes what killed backups (`kill -9`, a power cut) left in `dir`: their `.partial` and their
 * snapshot, a full copy of the database. Each nightly run names a new target, so nothing else
 * would: they would pile up until the disk is full. A file of a process that still runs (another
 * backup) is kept; one of this process's id is a dead one's (this backup has begun nothing yet).
 */
function removeLeftovers(dir: string): void {
  try {
    for (const name of fs.readdirSync(dir)) {
      const pid = Number(TEMP_FILE.exec(name)?.[1] ?? Number.NaN);
      if (Number.isNaN(pid) || (pid !== process.pid && isRunning(pid))) continue;
      fs.rmSync(path.join(dir, name), { force: true });
    }
  } catch (error) {
    throw failed(`cannot remove what an earlier backup left in ${dir}: ${fsReason(error)}`, error);
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0); // no signal sent: only whether the process exists
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH'; // EPERM: another user's, running
  }
}

function checkDataDir(dataDir: string, dbFile: string, keysOnly: boolean): void {
  if (!fs.existsSync(dataDir)) throw refused(`the data directory ${dataDir} does not exist (--data-dir)`);
  if (!keysOnly && !fs.existsSync(dbFile)) {
    throw refused(
      `${dataDir} has no ${path.basename(dbFile)}: nothing to back up (is it the coordinator's data directory? --data-dir)`,
    );
  }
}

/** Opens the temporary file of the archive `to`; a failure names `to`, what the operator asked for. */
async function openPrivate(file: string, to: string): Promise<FileHandle> {
  try {
    const handle = await fsp.open(file, 'w', 0o600);
    await handle.chmod(0o600); // exactly: a umask may have taken more off
    return handle;
  } catch (error) {
    throw failed(`cannot write ${to}: ${fsReason(error)}`, error);
  }
}

/**
 * Copies the live database with SQLite's online backup API. A write by the coordinator between
 * two steps makes SQLite start the copy over; after two restarts the rest is copied in one step
 * (a read transaction: in WAL mode the coordinator's writes do not wait for it).
 */
export async function snapshotDatabase(dbFile: string, snapshot: string, progress: Progress): Promise<void> {
  let source: Database.Database;
  try {
    source = new Database(dbFile, { readonly: true, fileMustExist: true });
    source.pragma('busy_timeout = 5000');
    const isDrover = source
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
      .get();
    if (!isDrover) {
      source.close();
      throw refused(`${dbFile} holds no Drover schema: it is not a coordinator's database`);
    }
  } catch (error) {
    if ((error as Error).name === 'BackupError') throw error;
    const code = (error as { code?: string }).code;
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
      throw refused(`${dbFile} is not a SQLite database: it is not a coordinator's database`);
    }
    throw failed(`cannot read ${dbFile}: ${fsReason(error)}`, error);
  }
  try {
    fs.closeSync(fs.openSync(snapshot, 'w', 0o600));
    let copied = -1;
    let restarts = 0;
    await source.backup(snapshot, {
      progress({ totalPages, remainingPages }) {
        // A step that leaves no more pages copied than the last one started over.
        if (totalPages - remainingPages <= copied) restarts++;
        copied = totalPages - remainingPages;
        const percent = totalPages > 0 ? Math.floor((100 * (totalPages - remainingPages)) / totalPages) : 100;
        progress.update(`snapshot of the database: ${percent} % of ${totalPages} pages`);
        // About 20 steps, at least 256 pages (1 MiB) each; all at once after two restarts.
        return restarts >= 2 ? 0x7fffffff : Math.max(256, Math.ceil(totalPages / 20));
      },
    });
  } finally {
    source.close();
  }
}

/**
 * Makes the snapshot one self-contained file (rollback journal: no `-wal` beside it; the
 * coordinator turns WAL on again when it opens it) and answers its schema version.
 */
function prepareSnapshot(snapshot: string): number {
  const db = new Database(snapshot, { fileMustExist: true });
  try {
    db.pragma('journal_mode = DELETE');
    const row = db.prepare('SELECT max(version) AS version FROM schema_migrations').get() as { version: number | null };
    return row.version ?? 0;
  } finally {
    db.close();
  }
}

/** The keys: the data directory's files on SQLite; on PostgreSQL the database's (those every coordinator uses). */
async function readKeys(config: BackupConfig, keysOnly: boolean): Promise<{ file: string; value: string }[]> {
  let fromFiles: { file: string; value: string }[];
  try {
    fromFiles = readDataDirKeys(config.dataDir).map((k) => ({ file: path.basename(k.file), value: k.value }));
  } catch (error) {
    throw failed((error as Error).message, error);
  }
  if (config.database.kind === 'sqlite') {
    if (keysOnly && fromFiles.length === 0) {
      throw refused(
        `${config.dataDir} holds no key files (${SERVER_KEY_FILE}, ${SECRETS_KEY_FILE}): nothing to back up`,
      );
    }
    return fromFiles;
  }
  const pool = createPool(config.database.url, { max: 1 });
  try {
    const secrets = createServerSecretRepository(new PostgresDatabase(pool));
    const keys: { file: string; value: string }[] = [];
    for (const [name, file] of Object.entries(KEY_FILES)) {
      // A database no coordinator started on yet has none: the file a first start would adopt.
      const value = (await secrets.get(name)) ?? fromFiles.find((k) => k.file === file)?.value;
      if (value !== undefined) keys.push({ file, value });
    }
    if (keys.length === 0) {
      throw refused(
        `${config.database.redactedUrl} holds no server keys, and ${config.dataDir} no key files: nothing to back up`,
      );
    }
    return keys;
  } catch (error) {
    if ((error as Error).name === 'BackupError') throw error;
    throw failed(`cannot read the keys from ${config.database.redactedUrl}: ${(error as Error).message}`, error);
  } finally {
    await pool.end();
  }
}

async function copyBlobs(
  writer: ArchiveWriter,
  snapshot: string,
  root: string,
  members: ArchiveMember[],
  files: BackupReport['files'],
  progress: Progress,
): Promise<void> {
  const source = SqliteSource.open(snapshot);
  try {
    if (source.schemaState(loadMigrations()).kind === 'not_drover') return;
    let after = 0;
    for (;;) {
      const page = source.localFiles(after, 500);
      if (page.rows.length === 0) break;
      after = page.last;
      for (const file of page.rows) {
        const blob = path.join(root, file.blobKey);
        const copied = await copyOne(writer, blob, `blobs/${file.blobKey}`, members, (n) => {
          files.bytes += n;
          progress.update(`copying files: ${files.copied} files, ${formatBytes(files.bytes)}`);
        });
        if (copied) {
          files.copied++;
          await copyOne(writer, `${blob}.meta`, `blobs/${file.blobKey}.meta`, members, () => undefined);
        } else if (file.status === 'active') {
          files.vanished++;
        }
      }
    }
  } finally {
    source.close();
  }
}

/** Adds the file if it is there; false when it is not (deleted since the snapshot, or never uploaded). */
async function copyOne(
  writer: ArchiveWriter,
  file: string,
  member: string,
  members: ArchiveMember[],
  onBytes: (n: number) => void,
): Promise<boolean> {
  let handle: FileHandle;
  try {
    handle = await fsp.open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  try {
    const stat = await handle.stat();
    members.push(await writer.fileMember(member, handle, stat.size, stat.mtime, onBytes));
    return true;
  } finally {
    await handle.close();
  }
}

function json(value: unknown): Buffer {
  return Buffer.from(`${JSON.stringify(value, null, 2)}\n`);
}

/** Makes a rename in `dir` durable. */
export function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
