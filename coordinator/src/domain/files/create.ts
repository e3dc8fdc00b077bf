import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Config } from '../../config/config.js';
import type { StorageConfig } from '../../config/storage-config.js';
import type { Repositories } from '../model/repositories.js';
import { StorageBackends } from '../../storage/backend.js';
import { BlobUrlSigner } from '../../storage/blob-url.js';
import { LocalBackend } from '../../storage/local-backend.js';
import { S3Backend } from '../../storage/s3-backend.js';
import type { StorageBinding } from '../model/storage-bindings.js';
import type { S3Config } from './storage-bindings.js';
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
  /** Where the coordinator's own files are kept (DROVER_STORAGE_URL). */
  storage: StorageConfig;
  /** The current configuration (its public URL changes once the server listens on port 0). */
  config: () => Config;
  logger: DeletionLogger;
  /** Counts the bytes of the local backend's transfers (docs/metrics.md); none by default. */
  metrics?: Metrics;
}

/**
 * Builds the files service with its backends (docs/storage.md): `local`, the coordinator's own
 * storage: blobs under `<dataDir>/blobs` (URLs signed with a key kept in the database), or the
 * bucket of DROVER_STORAGE_URL; `s3`, a binding's own bucket. Removes temp files an earlier
 * process left behind.
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
  const { storage } = o;
  const coordinatorStorage =
    storage.kind === 's3'
      ? new S3Backend({
          kind: 'local',
          bucket: storage.bucket,
          prefix: storage.prefix,
          endpoint: storage.endpoint,
          region: storage.region,
          forcePathStyle: storage.forcePathStyle,
          credentials: storage.credentials,
        })
      : local;
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
    backends: new StorageBackends({
      local: () => coordinatorStorage,
      s3: (binding) =>
        new S3Backend({
          kind: 's3',
          prefix: S3_BINDING_PREFIX,
          ...s3BindingConfig(binding),
          allowedHosts: o.config().storageAllowedHosts,
        }),
    }),
    clock: o.clock,
    settings: o.config,
    logger: o.logger,
    transfers,
    local,
  });
}

/** The objects of an `s3` binding are named `drover/<aa>/<file id>` in its bucket. */
export const S3_BINDING_PREFIX = 'drover/';

function s3BindingConfig(binding: StorageBinding) {
  const c = binding.config as unknown as S3Config;
  return {
    bucket: c.bucket,
    endpoint: c.endpoint,
    region: c.region,
    forcePathStyle: c.forcePathStyle,
    credentials: { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey },
  };
}
