import type { StoredFile } from '../model/files.js';
import type { StorageBinding } from '../model/storage-bindings.js';
import type { StorageBackend } from '../../storage/backend.js';
import { isoAt } from '../../util/clock.js';
import type { PresignedUploadView } from './view.js';

/** What a new file is made of: the labels and lifetime its creator chose, and who created it. */
export interface PendingFileFields {
  id: string;
  orgId: string;
  binding: StorageBinding;
  backend: StorageBackend;
  filename: string;
  contentType: string;
  cleanupRule: StoredFile['cleanupRule'];
  ttlSeconds: number | null;
  expiresAt: string | null;
  origin: StoredFile['origin'];
  createdByTokenId: string | null;
  createdByUserId: string | null;
  jobId: string | null;
  /** What an agent announced for a job output (checked at completion). */
  declared: { size: number; sha256: string } | null;
  /** Unix ms. */
  now: number;
  /** How long its upload URL is valid. */
  uploadTtlSeconds: number;
}

/** A `pending` file, waiting for its blob: the row presign-upload and job-output creation insert. */
export function newPendingFile(f: PendingFileFields): StoredFile {
  return {
    id: f.id,
    orgId: f.orgId,
    bindingId: f.binding.id,
    filename: f.filename,
    contentType: f.contentType,
    size: null,
    sha256: null,
    declaredSize: f.declared?.size ?? null,
    declaredSha256: f.declared?.sha256 ?? null,
    status: 'pending',
    cleanupRule: f.cleanupRule,
    ttlSeconds: f.ttlSeconds,
    expiresAt: f.expiresAt,
    deletedAt: null,
    createdAt: isoAt(f.now),
    completedAt: null,
    uploadExpiresAt: isoAt(f.now + f.uploadTtlSeconds * 1000),
    blobKey: f.backend.blobKeyFor(f.id),
    origin: f.origin,
    createdByTokenId: f.createdByTokenId,
    createdByUserId: f.createdByUserId,
    jobId: f.jobId,
    deleteAttempts: 0,
    nextDeleteAt: null,
    lastDeleteError: null,
  };
}

/** The upload URL of a pending file, as presign-upload answers it. */
export async function uploadView(
  file: StoredFile,
  backend: StorageBackend,
  expiresInSeconds: number,
): Promise<PresignedUploadView> {
  const up = await backend.presignUpload(
    { id: file.id, blobKey: file.blobKey, contentType: file.contentType },
    expiresInSeconds,
  );
  return { fileId: file.id, uploadUrl: up.url, method: 'PUT', headers: up.headers, expiresInSeconds };
}
