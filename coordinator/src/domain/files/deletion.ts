import type { FileRepository, StoredFile } from '../model/files.js';
import { conflict, notFound } from '../../errors.js';
import type { StorageBackend } from '../../storage/backend.js';
import { isoAt, type Clock } from '../../util/clock.js';

/** How long one deletion attempt holds a file in `deleting` before another may take it over. */
export const DELETE_LEASE_MS = 5 * 60_000;
/** A file still `pending` this long after its upload URL expired is deleted (an abandoned upload). */
export const ABANDONED_UPLOAD_GRACE_MS = 24 * 3600_000;
const FIRST_RETRY_MS = 30_000;
const MAX_RETRY_MS = 3600_000;

/** The wait before the next attempt after `attempts` failed ones: 30 s, doubling, at most 1 h. */
export function deleteRetryDelayMs(attempts: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, Math.min(attempts - 1, 20)));
}

export interface DeletionLogger {
  warn(obj: object, msg: string): void;
}

export interface FileDeletionDeps {
  files: FileRepository;
  clock: Clock;
  logger: DeletionLogger;
  backendOf(bindingId: string): Promise<StorageBackend>;
}

/**
 * Moves files `deleting` → `deleted` (blob removed) or `delete_failed` (retried with backoff).
 * Each attempt first claims the file (a conditional update with a lease), so two coordinators or
 * a DELETE racing the sweeper never delete the same file at once, and a file that a release which
 * is not yanked references is never touched.
 */
export class FileDeletion {
  constructor(private readonly d: FileDeletionDeps) {}

  /** Deletes one file now (public DELETE); answers the file as it is afterwards. */
  async deleteNow(fileId: string): Promise<StoredFile> {
    const now = this.d.clock.now();
    const claim = await this.d.files.claimForDelete(fileId, isoAt(now), isoAt(now + DELETE_LEASE_MS));
    switch (claim.outcome) {
      case 'not_found':
        throw notFound('File');
      case 'in_use':
        throw conflict(
          'The file is the artifact of a release that is not yanked; yank the release first',
          'file_in_use',
        );
      case 'unchanged':
        return claim.file;
      case 'claimed':
        return this.attempt(claim.file);
    }
  }

  /**
   * One sweep: expired `ttl` files, abandoned uploads and deletions due for a retry, up to `limit`
   * files; returns how many were handled (deleted or failed again).
   */
  async sweepDue(limit = 100): Promise<number> {
    const now = this.d.clock.now();
    const due = await this.d.files.claimDue({
      now: isoAt(now),
      abandonedBefore: isoAt(now - ABANDONED_UPLOAD_GRACE_MS),
      leaseUntil: isoAt(now + DELETE_LEASE_MS),
      limit,
    });
    for (const file of due) await this.attempt(file);
    return due.length;
  }

  /** Removes the claimed file's blob and records the outcome. */
  private async attempt(file: StoredFile): Promise<StoredFile> {
    try {
      const backend = await this.d.backendOf(file.bindingId);
      await backend.delete(file.blobKey);
    } catch (error) {
      const attempts = file.deleteAttempts + 1;
      const retryAt = isoAt(this.d.clock.now() + deleteRetryDelayMs(attempts));
      const message = error instanceof Error ? error.message : String(error);
      this.d.logger.warn({ fileId: file.id, attempts, retryAt, err: error }, 'file deletion failed; will retry');
      return (await this.d.files.markDeleteFailed(file.id, message, retryAt)) ?? file;
    }
    const at = isoAt(this.d.clock.now());
    await this.d.files.markDeleted(file.id, at);
    return { ...file, status: 'deleted', deletedAt: at, nextDeleteAt: null, lastDeleteError: null };
  }
}
