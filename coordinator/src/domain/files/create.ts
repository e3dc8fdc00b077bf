import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Config } from '../../config/config.js';
import type { Repositories } from '../model/repositories.js';
import { StorageBackends } from '../../storage/backend.js';
import { BlobUrlSigner } from '../../storage/blob-url.js';
import { LocalBackend } from '../../storage/local-backend.js';
import { LocalTransfers } from '../../storage/local-transfer.js';
import { isoNow, type Clock } from '../../util/clock.js';
import type { DeletionLogger } from './deletion.js';
import { noMetrics, type Metrics } from '../metrics.js';
import { FileService } from './file-service.js';

/** The name of the blob URL signing key in `server_secrets` (shared by coordinators on one database). */
export const BLOB_URL_KEY_NAME = 'blob_url_signing_key';

export interface CreateFileServiceOptions {
  repos: Pick<Repositories, 'files' | 'storageBindings' | 'serverSecrets'>;
  clock: Clock;
  dataDir: string;
  /** The current configuration (its public URL changes once the server listens on port 0). */
  config: () => Config;
  logger: DeletionLogger;
  /** Counts the bytes of the local backend's transfers (docs/metrics.md); none by default. */
  metrics?: Metrics;
}

/**
 * Builds the files service with its backends: `local` (blobs under `<dataDir>/blobs`, URLs signed
 * with a key kept in the database). Removes temp files an earlier process left behind.
 */
export async function createFileService(o: CreateFileServiceOptions): Promise<FileService> {
  const key = await o.repos.serverSecrets.getOrCreate(
    BLOB_URL_KEY_NAME,
    () => randomBytes(32).toString('base64'),
    isoNow(o.clock),
  );
  const signer = new BlobUrlSigner(Buffer.from(key, 'base64'));
  const local = new LocalBackend({
    root: path.join(o.dataDir, 'blobs'),
    signer,
    publicUrl: () => o.config().publicUrl,
    clock: o.clock,
  });
  await local.init();
  const transfers = new LocalTransfers({
    files: o.repos.files,
    local,
    signer,
    clock: o.clock,
    maxFileBytes: () => o.config().maxFileBytes,
    metrics: o.metrics ?? noMetrics,
  });
  return new FileService({
    files: o.repos.files,
    storageBindings: o.repos.storageBindings,
    backends: new StorageBackends({ local: () => local }),
    clock: o.clock,
    settings: o.config,
    logger: o.logger,
    transfers,
    local,
  });
}
