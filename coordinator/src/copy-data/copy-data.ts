import { CopyDataError } from './copy-data-error.js';
import fs from 'node:fs';
import path from 'node:path';
import { isLockHeldError } from '@drover/shared';
import { dataDirHolder, lockDataDir } from '../cli/data-dir-lock.js';
import { readDataDirKeys, type DataDirKey } from './data-dir-keys.js';
import type { CopyDataConfig } from '../config/copy-data-config.js';
import { copyDatabase, TargetNotEmptyError, type TableCopy } from '../db/copy/copy-database.js';
import { firstTableWithRows } from '../db/copy/postgres-target.js';
import { SqliteSource } from '../db/copy/sqlite-source.js';
import { COPIED_TABLES } from '../db/copy/tables.js';
import { databaseFile } from '../db/database.js';
import { loadMigrations, migratePostgres } from '../db/migrate.js';
import { createPool } from '../db/postgres/pool.js';
import { copyBlobs, type BlobCopyResult } from '../storage/copy-blobs.js';
import { S3Backend } from '../storage/s3-backend.js';
import { formatBytes, type CopyDataReport } from './report.js';

/**
 * `copy-data` (docs/scaling.md, "Moving a coordinator"): a stopped SQLite coordinator's data into
 * an empty PostgreSQL database, and its files into a bucket. The order makes every outcome safe:
 * all refusals come before anything is written; the files go first (objects named by file id:
 * a second attempt overwrites them); the database last, in one transaction checked before its
 * commit. A failure at any point leaves the target database empty, never half-copied.
 */

const refused = (message: string) => new CopyDataError('refused', message);
const failed = (message: string, cause?: unknown) => new CopyDataError('failed', message, { cause });

/** Copies, telling `progress` a line now and then on long tables and many files. */
export async function copyData(
  config: CopyDataConfig,
  progress: (line: string) => void = () => undefined,
): Promise<CopyDataReport> {
  const started = Date.now();
  const { dataDir } = config;
  const release = lockSource(dataDir);
  try {
    const source = openSource(dataDir);
    try {
      let keys: DataDirKey[];
      try {
        keys = readDataDirKeys(dataDir);
      } catch (error) {
        throw failed((error as Error).message, error);
      }
      const target = config.to.redactedUrl;
      const pool = createPool(config.to.url, { max: 1 });
      try {
        // Refused before the migration too: a database in use is not even migrated.
        const busy = await firstTableWithRows(pool, COPIED_TABLES).catch((error: Error) => {
          throw failed(`cannot read ${target}: ${error.message}`, error);
        });
        if (busy) throw refused(`${target}: ${new TargetNotEmptyError(busy).message}`);
        await migratePostgres(pool).catch((error: Error) => {
          throw failed(`cannot migrate ${target}: ${error.message}`, error);
        });
        const filesStarted = Date.now();
        const blobs = config.filesTo
          ? await copyFiles(source, dataDir, new S3Backend({ kind: 'local', ...config.filesTo }), progress)
          : null;
        const databaseStarted = Date.now();
        let tables: TableCopy[];
        try {
          tables = await copyDatabase({
            source,
            pool,
            extraSecrets: keys,
            onProgress: every5s((table: string, done: number, total: number) =>
              progress(`copying ${table}: ${done} of ${total} rows`),
            ),
          });
        } catch (error) {
          if (error instanceof TargetNotEmptyError) throw refused(`${target}: ${error.message}`);
          throw failed(`copy-data failed, nothing was committed to ${target}: ${(error as Error).message}`, error);
        }
        const filesLeft = blobs ? 0 : countLocalFiles(source);
        const done = Date.now();
        return {
          tables,
          blobs,
          filesLeft,
          keys,
          seconds: {
            files: (databaseStarted - filesStarted) / 1000,
            database: (done - databaseStarted) / 1000,
            total: (done - started) / 1000,
          },
        };
      } finally {
        await pool.end();
      }
    } finally {
      source.close();
    }
  } finally {
    release();
  }
}

/**
 * Refuses a directory that is not a coordinator's or that a coordinator runs on, and takes its
 * lock for the copy (no coordinator starts on it meanwhile). Creates nothing.
 */
function lockSource(dataDir: string): () => void {
  const file = databaseFile(dataDir);
  if (!fs.existsSync(dataDir)) throw refused(`the data directory ${dataDir} does not exist (--data-dir)`);
  if (!fs.existsSync(file)) {
    throw refused(`${dataDir} is not a coordinator's data directory: it has no ${path.basename(file)}`);
  }
  const inUse = (pid: number) =>
    refused(`the data directory ${dataDir} is in use by a running drover-coordinator (pid ${pid}); stop it first`);
  const holder = dataDirHolder(dataDir);
  if (holder !== null) throw inUse(holder);
  try {
    return lockDataDir(dataDir);
  } catch (error) {
    if (isLockHeldError(error)) throw inUse(error.pid);
    throw failed(`cannot lock the data directory ${dataDir}: ${(error as Error).message}`, error);
  }
}

/** Opens the data directory's database read-only; refuses one that is not of this build's schema. */
function openSource(dataDir: string): SqliteSource {
  const file = databaseFile(dataDir);
  let source: SqliteSource;
  try {
    source = SqliteSource.open(file);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
      throw refused(`${dataDir} is not a coordinator's data directory: ${file} is not a SQLite database`);
    }
    throw failed(`cannot read ${file}: ${(error as Error).message}`, error);
  }
  const state = source.schemaState(loadMigrations());
  const problem =
    state.kind === 'not_drover'
      ? `${dataDir} is not a coordinator's data directory: ${file} holds no Drover schema`
      : state.kind === 'behind'
        ? `${file} is at schema version ${state.version}, this build copies version ${state.expected}: run drover-coordinator migrate --data-dir ${dataDir} first`
        : state.kind === 'ahead'
          ? `${file} was made by a newer drover-coordinator (migrations ${state.unknown.join(', ')}): copy it with that version`
          : null;
  if (problem !== null) {
    source.close();
    throw refused(problem);
  }
  return source;
}

function* localFilePages(source: SqliteSource, size: number) {
  let after = 0;
  for (;;) {
    const page = source.localFiles(after, size);
    if (page.rows.length === 0) return;
    after = page.last;
    yield page.rows;
  }
}

async function copyFiles(
  source: SqliteSource,
  dataDir: string,
  target: S3Backend,
  progress: (line: string) => void,
): Promise<BlobCopyResult> {
  try {
    return await copyBlobs({
      root: path.join(dataDir, 'blobs'),
      target,
      pages: localFilePages(source, 500),
      onProgress: every5s((copied: number, bytes: number) =>
        progress(`copying files: ${copied} files, ${formatBytes(bytes)}`),
      ),
    });
  } catch (error) {
    throw failed(
      `copy-data failed while copying files to ${target.location}, nothing was written to the database: ${(error as Error).message}`,
      error,
    );
  }
}

function countLocalFiles(source: SqliteSource): number {
  let count = 0;
  for (const page of localFilePages(source, 1000)) count += page.length;
  return count;
}

/** Calls `f` at most every 5 seconds. */
function every5s<A extends unknown[]>(f: (...args: A) => void): (...args: A) => void {
  let last = Date.now();
  return (...args) => {
    if (Date.now() - last < 5000) return;
    last = Date.now();
    f(...args);
  };
}

export { CopyDataError };
