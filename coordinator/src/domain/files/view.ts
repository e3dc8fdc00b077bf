import type { CleanupRule, FileStatus, StoredFile } from '../model/files.js';

/**
 * A stored file as the public API shows it (docs/storage.md). Internal fields (organization,
 * job, blob key, deletion bookkeeping) are never part of it.
 */
export interface FileView {
  id: string;
  bindingId: string;
  filename: string;
  contentType: string;
  /** 0 until the upload is complete. */
  size: number;
  status: FileStatus;
  cleanupRule: Exclude<CleanupRule, 'on_job_end'>;
  expiresAt: string | null;
  deletedAt: string | null;
  createdAt: string;
}

export function toFileView(file: StoredFile): FileView {
  return {
    id: file.id,
    bindingId: file.bindingId,
    filename: file.filename,
    contentType: file.contentType,
    size: file.size ?? 0,
    status: file.status,
    // `on_job_end` is internal; such a file is shown with the rule that behaves alike.
    cleanupRule: file.cleanupRule === 'persistent' ? 'persistent' : 'ttl',
    expiresAt: file.expiresAt,
    deletedAt: file.deletedAt,
    createdAt: file.createdAt,
  };
}

/** The answer of presign-upload (docs/storage.md) and of the agent's job-output upload request. */
export interface PresignedUploadView {
  fileId: string;
  uploadUrl: string;
  method: 'PUT';
  headers: Record<string, string>;
  expiresInSeconds: number;
}

export interface DownloadUrlView {
  downloadUrl: string;
  expiresInSeconds: number;
}

/** What an agent needs to fetch an input file and verify it. */
export interface AgentFileDownload extends DownloadUrlView {
  size: number;
  sha256: string;
  filename: string;
  contentType: string;
}
