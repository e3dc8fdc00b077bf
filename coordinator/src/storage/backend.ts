import type { StorageBackend as BackendKind, StorageBinding } from '../domain/model/storage-bindings.js';

/**
 * The storage backend seam (docs/storage.md). The files service talks to a binding's blobs only
 * through this interface; routes never see it. A backend presigns URLs that the caller uses
 * directly (the local backend's URLs point back at the coordinator, an S3 backend's at the
 * bucket), reports what was uploaded, and deletes blobs.
 *
 * Presigning is pure computation (an HMAC, or SigV4 for S3), never a network call, so a fresh
 * download URL can be put into every job sent to an agent cheaply; it is asynchronous because the
 * AWS SDK's presigner is.
 */
export interface StorageBackend {
  readonly kind: BackendKind;
  /** The key of a file's blob: derived from the file id only, never from the filename. */
  blobKeyFor(fileId: string): string;
  presignUpload(file: UploadTarget, expiresInSeconds: number): Promise<PresignedUpload>;
  presignDownload(file: DownloadTarget, expiresInSeconds: number): Promise<PresignedDownload>;
  /**
   * The uploaded blob's size and SHA-256 (what `complete` records), or null when there is none.
   * Throws StorageUnavailableError when the store cannot be reached or refuses.
   */
  stat(blobKey: string): Promise<BlobStat | null>;
  /** Removes the blob; idempotent (a missing blob is fine). Throws when the store refuses. */
  delete(blobKey: string): Promise<void>;
}

/**
 * A file's blob key on every backend: `<aa>/<file id>` (`aa`, the id's first two characters), so
 * that blobs move between the data directory and a bucket under the same key.
 */
export function blobKeyOf(fileId: string): string {
  const id = fileId.toLowerCase();
  return `${id.slice(0, 2)}/${id}`;
}

/** The store behind a backend could not be reached, or refused (its words in the message). */
export class StorageUnavailableError extends Error {
  readonly code = 'storage_unavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageUnavailableError';
  }
}

export interface UploadTarget {
  id: string;
  blobKey: string;
  contentType: string;
}

export interface DownloadTarget {
  id: string;
  blobKey: string;
  filename: string;
  contentType: string;
  size: number;
}

export interface PresignedUpload {
  url: string;
  method: 'PUT';
  /** Headers the uploader sends with the PUT. */
  headers: Record<string, string>;
}

export interface PresignedDownload {
  url: string;
}

export interface BlobStat {
  size: number;
  /** Lowercase hex. */
  sha256: string;
}

/** Makes the backend of one binding (an S3 backend needs the binding's bucket and keys). */
export type BackendFactory = (binding: StorageBinding) => StorageBackend;

export class UnsupportedBackendError extends Error {
  readonly code = 'unsupported_backend';
  constructor(readonly kind: string) {
    super(`The ${kind} storage backend is not available in this coordinator`);
    this.name = 'UnsupportedBackendError';
  }
}

/** Picks the implementation by the binding's `backend`; adding `s3` is one more factory. */
export class StorageBackends {
  constructor(private readonly factories: Partial<Record<BackendKind, BackendFactory>>) {}

  supports(kind: BackendKind): boolean {
    return this.factories[kind] !== undefined;
  }

  /** The binding's backend; throws UnsupportedBackendError for a kind without implementation. */
  forBinding(binding: StorageBinding): StorageBackend {
    const factory = this.factories[binding.backend];
    if (!factory) throw new UnsupportedBackendError(binding.backend);
    return factory(binding);
  }
}
