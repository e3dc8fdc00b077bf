import fs from 'node:fs';
import type { Command } from 'commander';
import { isLockHeldError } from '@drover/shared';
import { unfinishedRestore } from '../backup/staging.js';
import { ConfigError, loadConfig, type Config, type ConfigFlags } from '../config/config.js';
import { dataDirHolder, dataDirLockFile, lockDataDir, rootInAnotherUsersDir } from './data-dir-lock.js';

/** The flags every command that touches the data directory shares (docs/operations.md). */
export function withServerOptions(command: Command): Command {
  return command
    .option('--port <port>', 'port to listen on (env DROVER_PORT, default 8080)')
    .option('--host <host>', 'address to bind (env DROVER_HOST, default 127.0.0.1)')
    .option('--data-dir <dir>', 'SQLite file, local blobs and server key (env DROVER_DATA_DIR, default ./data)')
    .option('--public-url <url>', 'URL clients reach this server at (env DROVER_PUBLIC_URL)')
    .option(
      '--database-url <url>',
      'keep the state in PostgreSQL: postgres://user:password@host:port/database (env DROVER_DATABASE_URL; default: SQLite in the data directory)',
    )
    .option(
      '--storage-url <url>',
      'keep files in an S3-compatible bucket: s3://<bucket>?endpoint=...&region=... (env DROVER_STORAGE_URL; default: the data directory)',
    )
    .option(
      '--log-level <level>',
      'fatal, error, warn, info, debug, trace or silent (env DROVER_LOG_LEVEL, default info)',
    )
    .option(
      '--log-format <format>',
      'json, pretty or auto: readable lines on a terminal, JSON otherwise (env DROVER_LOG_FORMAT, default auto)',
    );
}

/** Loads the configuration or exits 2 with the list of what is wrong. */
export function configOrExit(flags: ConfigFlags): Config {
  try {
    return loadConfig(process.env, flags);
  } catch (error) {
    if (error instanceof ConfigError) exitWith(2, error.message);
    throw error;
  }
}

/** Exits with `status` after one line on stderr: the end of a command that failed or was refused. */
export function exitWith(status: number, message: string): never {
  process.stderr.write(`drover-coordinator: ${message}\n`);
  process.exit(status);
}

function inUse(dataDir: string, pid: number): never {
  exitWith(1, `the data directory ${dataDir} is in use by another drover-coordinator (pid ${pid}); stop it first`);
}

/**
 * Exits 2 in one line when the data directory's path names something that is not a directory (a
 * file): otherwise what the lock file's open or the directory's mkdir says (ENOTDIR, EEXIST) is all
 * an operator would see, and neither names the setting.
 */
function refuseIfNotADirectory(dataDir: string): void {
  const check = '(check --data-dir or DROVER_DATA_DIR)';
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dataDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') {
      exitWith(2, `the data directory ${dataDir} cannot be made: a part of its path is a file ${check}`);
    }
    return; // missing (made by whoever needs it), or unreadable: said when it is used
  }
  if (!stat.isDirectory()) exitWith(2, `the data directory ${dataDir} is not a directory ${check}`);
}

/** Exits 1 in one line when a running coordinator process holds the data directory; creates nothing. */
export function refuseIfDataDirInUse(dataDir: string): void {
  refuseIfNotADirectory(dataDir);
  let holder: number | null;
  try {
    holder = dataDirHolder(dataDir);
  } catch (error) {
    cannotUse(dataDir, error); // its lock cannot be read (a directory in its place, no permission)
  }
  if (holder !== null) inUse(dataDir, holder);
}

/**
 * Takes the data directory's lock for the rest of this process (released when it exits), or
 * exits 1 in one line: held by another coordinator process, or the directory cannot be made; 2
 * when a restore into it was stopped before it finished (a new, empty database would be made
 * beside the restored keys), or when root runs `command` on the directory of another user (the
 * service's, whose files root's would become unreadable to).
 */
export function lockDataDirOrExit(dataDir: string, command: 'start' | 'migrate' | 'bootstrap'): () => void {
  refuseIfNotADirectory(dataDir);
  const asRoot = rootInAnotherUsersDir(dataDir, command);
  if (asRoot !== null) exitWith(2, asRoot);
  let release: () => void;
  try {
    release = lockDataDir(dataDir);
  } catch (error) {
    if (isLockHeldError(error)) inUse(dataDir, error.pid);
    cannotUse(dataDir, error);
  }
  process.once('exit', release);
  const staging = unfinishedRestore(dataDir);
  if (staging !== null) {
    exitWith(
      2,
      `the data directory ${dataDir} holds ${staging}, left by a restore that was stopped before it finished: run drover-coordinator restore into it again (what the stopped one left is removed first)`,
    );
  }
  return release;
}

function cannotUse(dataDir: string, error: unknown): never {
  // Node's errors name the file they opened; what is refused for not being a file (a FIFO:
  // EINVAL), or read from a directory in its place (EISDIR), does not: the lock file is named.
  const lockFile = (error as NodeJS.ErrnoException).path === undefined ? `${dataDirLockFile(dataDir)}: ` : '';
  exitWith(1, `cannot use the data directory ${dataDir}: ${lockFile}${(error as Error).message}`);
}
