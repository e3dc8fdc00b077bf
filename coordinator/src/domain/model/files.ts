import type { StorageBinding } from './storage-bindings.js';

export const FILE_STATUSES = ['pending', 'active', 'deleting', 'deleted', 'delete_failed'] as const;
export type FileStatus = (typeof FILE_STATUSES)[number];
/** `on_job_end` is internal: the public API never accepts it. */
export type CleanupRule = 'ttl' | 'persistent' | 'on_job_end';
export type FileOrigin = 'api' | 'agent';

/** A stored file's row (migration 0004). Timestamps are ISO 8601 strings. */
export interface StoredFile {
  id: string;
  orgId: string;
  bindingId: string;
  filename: string;
  contentType: string;
  /** null until complete. */
  size: number | null;
  sha256: string | null;
  /** What an agent announced for a job output; complete refuses a blob that differs. */
  declaredSize: number | null;
  declaredSha256: string | null;
  status: FileStatus;
  cleanupRule: CleanupRule;
  /** With `ttl`: the lifetime, counted from completion. */
  ttlSeconds: number | null;
  expiresAt: string | null;
  deletedAt: string | null;
  createdAt: string;
  completedAt: string | null;
  /** When the upload URL issued at presign expires. */
  uploadExpiresAt: string;
  /** The backend's key for the blob: derived from the id only, never from the filename. */
  blobKey: string;
  origin: FileOrigin;
  createdByTokenId: string | null;
  /** The member who uploaded it from the dashboard, or null. */
  createdByUserId: string | null;
  jobId: string | null;
  deleteAttempts: number;
  nextDeleteAt: string | null;
  lastDeleteError: string | null;
}

/** A file as the presigned blob endpoints see it: with whether its binding was deleted. */
export interface FileForTransfer extends StoredFile {
  bindingDeleted: boolean;
}

export interface FileListQuery {
  orgId: string;
  /** The bindings the caller may see; null: every (not deleted) binding of the organization. */
  bindingIds: readonly string[] | null;
  bindingId: string | null;
  status: FileStatus | null;
  /** Only the files listed after this one (the previous page's last); null: from the newest. */
  after: FileListPosition | null;
  limit: number;
}

/**
 * Where a file stands in the lists' order (newest first): its creation instant, then its insertion
 * order among files created in the same millisecond (SQLite's rowid, PostgreSQL's seq).
 */
export interface FileListPosition {
  createdAt: string;
  key: number;
}

/** A page of a list: its files, and the position of its last when more follow. */
export interface FileListPage {
  files: StoredFile[];
  next: FileListPosition | null;
}

/** What claiming a file for deletion found. */
export type DeleteClaim =
  | { outcome: 'claimed'; file: StoredFile }
  /** Already deleted, or another deletion holds it: nothing to do now. */
  | { outcome: 'unchanged'; file: StoredFile }
  | { outcome: 'in_use'; file: StoredFile }
  | { outcome: 'not_found' };

export interface FileRepository {
  /** False when its binding is deleted (also meanwhile, by another coordinator): nothing stored. */
  insert(file: StoredFile): Promise<boolean>;
  /** A file of the organization whose binding is not deleted. */
  findInOrg(orgId: string, id: string): Promise<StoredFile | null>;
  findForTransfer(id: string): Promise<FileForTransfer | null>;
  /** Newest first, at most `limit`. */
  list(query: FileListQuery): Promise<FileListPage>;
  /** The active files of the organization among `ids` (bindings not deleted). */
  findActiveInOrg(orgId: string, ids: readonly string[]): Promise<StoredFile[]>;
  /** pending → active with the blob's size and hash; false when the file was not pending. */
  complete(
    id: string,
    done: { size: number; sha256: string; completedAt: string; expiresAt: string | null },
  ): Promise<boolean>;
  /**
   * Moves a file to `deleting` with a lease ending at `leaseUntil`, unless a release that is not
   * yanked references it, it is already deleted, or another deletion's lease is still running.
   */
  claimForDelete(id: string, now: string, leaseUntil: string): Promise<DeleteClaim>;
  /** Claims up to `limit` files the sweeper must delete now (domain/files/file-sweeper.ts). */
  claimDue(due: { now: string; abandonedBefore: string; leaseUntil: string; limit: number }): Promise<StoredFile[]>;
  /** deleting → deleted; false when the file was not `deleting`. */
  markDeleted(id: string, at: string): Promise<boolean>;
  /** deleting → delete_failed, one more attempt counted, the next retry at `retryAt`. */
  markDeleteFailed(id: string, error: string, retryAt: string): Promise<StoredFile | null>;
  /** Whether a release that is not yanked references the file. */
  isInUse(id: string): Promise<boolean>;
  /** A binding by id, deleted or not (the sweeper still deletes the blobs of a deleted binding). */
  findBinding(bindingId: string): Promise<StorageBinding | null>;
  /** How many files of the binding are not `deleted` (a binding holding files cannot be deleted). */
  countUndeletedInBinding(bindingId: string): Promise<number>;
  /** How many files were made as the job's output files, whatever their status. */
  countOfJob(jobId: string): Promise<number>;
}
