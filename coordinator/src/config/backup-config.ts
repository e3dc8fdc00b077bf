import path from 'node:path';
import { ConfigError, DEFAULTS } from './config.js';
import { parseDatabaseUrl, type DatabaseConfig } from './database-config.js';
import { parseStorageUrl, type StorageConfig } from './storage-config.js';

/**
 * What `drover-coordinator backup` and `restore` work on (docs/operations.md, "Backup and
 * restore"): the data directory (`--data-dir`, else DROVER_DATA_DIR, else `./data`), and for a
 * backup where the running coordinator keeps its state and files (`--database-url` /
 * DROVER_DATABASE_URL, `--storage-url` / DROVER_STORAGE_URL), read with the parsers of `start`,
 * so that a backup run with the coordinator's environment file sees what the coordinator sees.
 */
export interface BackupConfig {
  readonly dataDir: string;
  readonly database: DatabaseConfig;
  readonly storage: StorageConfig;
}

export interface BackupConfigFlags {
  dataDir?: string | undefined;
  databaseUrl?: string | undefined;
  storageUrl?: string | undefined;
}

export function loadBackupConfig(
  env: Record<string, string | undefined>,
  flags: BackupConfigFlags,
  cwd = process.cwd(),
): BackupConfig {
  const problems: string[] = [];
  const pick = (flag: string | undefined, flagName: string, envName: string) => {
    if (flag !== undefined) return { value: flag, source: `--${flagName}` };
    const fromEnv = env[envName];
    return fromEnv !== undefined && fromEnv !== '' ? { value: fromEnv, source: envName } : undefined;
  };
  const dataDirRaw = pick(flags.dataDir, 'data-dir', 'DROVER_DATA_DIR');
  if (dataDirRaw && dataDirRaw.value.trim() === '') {
    problems.push(`${dataDirRaw.source}: expected a directory path, got an empty string`);
  }
  const dataDir = path.resolve(cwd, dataDirRaw?.value.trim() || DEFAULTS.dataDir);
  const database = parseDatabaseUrl(pick(flags.databaseUrl, 'database-url', 'DROVER_DATABASE_URL'), problems);
  const storage = parseStorageUrl(pick(flags.storageUrl, 'storage-url', 'DROVER_STORAGE_URL'), env, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({ dataDir, database, storage });
}

/** Where the coordinator keeps its files without DROVER_STORAGE_URL (storage/local-backend.ts). */
export const localBlobs = (config: BackupConfig): string => path.join(config.dataDir, 'blobs');
