import path from 'node:path';
import { ConfigError, DEFAULTS } from './config.js';
import { parseDatabaseUrl } from './database-config.js';
import { parseStorageUrl, type S3StorageLocation } from './storage-config.js';

/**
 * What `drover-coordinator copy-data` works on (docs/scaling.md, "Moving a coordinator"): the data
 * directory it reads (`--data-dir`, else DROVER_DATA_DIR, else `./data`), the PostgreSQL database
 * it fills (`--to`, required: never taken from DROVER_DATABASE_URL, so that the direction of the
 * copy is always written out) and the bucket its files go to (`--files-to`, with the keys of
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the AWS SDK's usual sources), validated with the
 * parsers of DROVER_DATABASE_URL and DROVER_STORAGE_URL.
 */
export interface CopyDataConfig {
  readonly dataDir: string;
  readonly to: { readonly url: string; readonly redactedUrl: string };
  /** null: the files stay in the data directory. */
  readonly filesTo: S3StorageLocation | null;
}

export interface CopyDataFlags {
  dataDir?: string | undefined;
  to?: string | undefined;
  filesTo?: string | undefined;
}

export function loadCopyDataConfig(
  env: Record<string, string | undefined>,
  flags: CopyDataFlags,
  cwd = process.cwd(),
): CopyDataConfig {
  const problems: string[] = [];
  const dataDirRaw =
    flags.dataDir !== undefined
      ? { value: flags.dataDir, source: '--data-dir' }
      : env.DROVER_DATA_DIR
        ? { value: env.DROVER_DATA_DIR, source: 'DROVER_DATA_DIR' }
        : undefined;
  if (dataDirRaw && dataDirRaw.value.trim() === '') {
    problems.push(`${dataDirRaw.source}: expected a directory path, got an empty string`);
  }
  const dataDir = path.resolve(cwd, dataDirRaw?.value.trim() || DEFAULTS.dataDir);

  let to: CopyDataConfig['to'] | null = null;
  if (flags.to === undefined) {
    problems.push(
      '--to: expected the PostgreSQL database to copy into, postgres://<user>:<password>@<host>/<database>',
    );
  } else {
    const database = parseDatabaseUrl({ value: flags.to, source: '--to' }, problems);
    if (database.kind === 'postgres') to = { url: database.url, redactedUrl: database.redactedUrl };
  }

  let filesTo: S3StorageLocation | null = null;
  if (flags.filesTo !== undefined) {
    const storage = parseStorageUrl({ value: flags.filesTo, source: '--files-to' }, env, problems);
    if (storage.kind === 's3') {
      const { kind: _kind, ...location } = storage;
      filesTo = location;
    }
  }

  if (problems.length > 0 || to === null) throw new ConfigError(problems);
  return Object.freeze({ dataDir, to, filesTo });
}
