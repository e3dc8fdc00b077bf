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
  /**
   * Whether an upload may still land in the store after the coordinator stopped accepting it (a
   * bucket: a presigned PUT goes straight to the store until its URL expires), so that the file's
   * staged uploads must be removed once more when its upload URL has expired.
   */
  readonly lateUploads: boolean;
  /** The key of a file's blob: derived from the file id only, never from the filename. */
  blobKeyFor(fileId: string): string;
  /**
   * An upload URL. It never writes the file's blob: each upload is staged under a name of its
   * own, and `complete` promotes one (findUpload, promote), so a PUT that lands late never
   * touches a completed file.
   */
  presignUpload(file: UploadTarget, expiresInSeconds: number): Promise<PresignedUpload>;
  presignDownload(file: DownloadTarget, expiresInSeconds: number): Promise<PresignedDownload>;
  /**
   * The newest finished upload of the file with its size and SHA-256 (what `complete` records),
   * or null when there is none. Its size is checked against `maxBytes` before any byte is read
   * (UploadTooLargeError), and no more than its size is ever read. Throws StorageUnavailableError
   * when the store cannot be reached, refuses, or does not send the object in time.
   */
  findUpload(file: BlobFile, maxBytes: number): Promise<StagedUpload | null>;
  /**
   * Makes the staged upload the file's blob (a rename, or a copy in the store); the caller
   * checked that the file is still pending. Throws UploadChangedError when the upload is gone or
   * was replaced since findUpload.
   */
  promote(file: BlobFile, upload: StagedUpload): Promise<void>;
  /** Removes the file's staged uploads, if any; idempotent. Throws when the store refuses. */
  discardUploads(file: BlobFile): Promise<void>;
  /** Removes the blob and the file's staged uploads; idempotent (a missing blob is fine). Throws when the store refuses. */
  delete(blobKey: string): Promise<void>;
}

/** A file as its blob and staged uploads are found. */
export interface BlobFile {
  id: string;
  blobKey: string;
}

/** A finished upload of a file, not yet its blob (or, `ref` empty, already in place). */
export interface StagedUpload extends BlobStat {
  /** Which upload: the backend's own name for it; empty for a blob already in place. */
  ref: string;
  /** The version that was hashed (an S3 ETag), when the store has one. */
  version?: string;
}

/** The upload is larger than the limit it was checked against (`size` null: more than `limit`, exact size unknown). */
export class UploadTooLargeError extends Error {
  constructor(
    readonly size: number | null,
    readonly limit: number,
  ) {
    super(`the upload has ${size ?? `more than ${limit}`} bytes, more than ${limit}`);
    this.name = 'UploadTooLargeError';
  }
}

/** The upload was replaced or removed between its check and its promotion. */
export class UploadChangedError extends Error {
  constructor(message = 'the upload changed while it was being completed') {
    super(message);
    this.name = 'UploadChangedError';
  }
}

/** The file id of a blob key (`<aa>/<file id>`). */
export function fileIdOfBlobKey(blobKey: string): string {
  return blobKey.slice(blobKey.lastIndexOf('/') + 1);
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
