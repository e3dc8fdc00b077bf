import type {
  CleanupRule,
  DeleteClaim,
  FileOrigin,
  FileRepository,
  FileStatus,
  StoredFile,
} from '../../../domain/model/files.js';
import type { PgPool, Queryable } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';
import { BINDING_COLUMNS, toBinding, type BindingRow } from './storage-bindings.js';

interface FileRow {
  id: string;
  org_id: string;
  binding_id: string;
  filename: string;
  content_type: string;
  size: number | null;
  sha256: string | null;
  declared_size: number | null;
  declared_sha256: string | null;
  status: FileStatus;
  cleanup_rule: CleanupRule;
  ttl_seconds: number | null;
  expires_at: string | null;
  deleted_at: string | null;
  created_at: string;
  completed_at: string | null;
  upload_expires_at: string;
  blob_key: string;
  origin: FileOrigin;
  created_by_token_id: string | null;
  created_by_user_id: string | null;
  job_id: string | null;
  delete_attempts: number;
  next_delete_at: string | null;
  last_delete_error: string | null;
}

const toFile = (r: FileRow): StoredFile => ({
  id: r.id,
  orgId: r.org_id,
  bindingId: r.binding_id,
  filename: r.filename,
  contentType: r.content_type,
  size: r.size,
  sha256: r.sha256,
  declaredSize: r.declared_size,
  declaredSha256: r.declared_sha256,
  status: r.status,
  cleanupRule: r.cleanup_rule,
  ttlSeconds: r.ttl_seconds,
  expiresAt: r.expires_at,
  deletedAt: r.deleted_at,
  createdAt: r.created_at,
  completedAt: r.completed_at,
  uploadExpiresAt: r.upload_expires_at,
  blobKey: r.blob_key,
  origin: r.origin,
  createdByTokenId: r.created_by_token_id,
  createdByUserId: r.created_by_user_id,
  jobId: r.job_id,
  deleteAttempts: r.delete_attempts,
  nextDeleteAt: r.next_delete_at,
  lastDeleteError: r.last_delete_error,
});

/** The file `f` backs a release that is not yanked. */
const IN_USE = `EXISTS (SELECT 1 FROM releases r WHERE r.artifact_file_id = f.id AND r.status <> 'yanked')`;
const VISIBLE = 'FROM files f JOIN storage_bindings b ON b.id = f.binding_id AND b.deleted_at IS NULL';

/** The ids among `ids` that a release that is not yanked references, read by a statement of its own. */
const inUse = async (db: Queryable, ids: readonly string[]) =>
  new Set(
    (await all<{ id: string }>(db, `SELECT f.id FROM files f WHERE f.id = ANY($1::text[]) AND ${IN_USE}`, [ids])).map(
      (r) => r.id,
    ),
  );

/**
 * A file is moved to `deleting` under its row lock, and whether a release uses it is read after
 * the lock is held, in a statement of its own (READ COMMITTED: a release committed meanwhile is
 * seen). A release's creation locks the file's row too (releases.ts), so a file is never both
 * claimed for deletion and made a release's artifact, whichever coordinators do the two.
 */
export function createFileRepository(pool: PgPool): FileRepository {
  return {
    async insert(f) {
      await run(
        pool,
        `INSERT INTO files (id, org_id, binding_id, filename, content_type, size, sha256, declared_size,
           declared_sha256, status, cleanup_rule, ttl_seconds, expires_at, deleted_at, created_at, completed_at,
           upload_expires_at, blob_key, origin, created_by_token_id, created_by_user_id, job_id, delete_attempts,
           next_delete_at, last_delete_error)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
           $22, $23, $24, $25)`,
        [
          f.id,
          f.orgId,
          f.bindingId,
          f.filename,
          f.contentType,
          f.size,
          f.sha256,
          f.declaredSize,
          f.declaredSha256,
          f.status,
          f.cleanupRule,
          f.ttlSeconds,
          f.expiresAt,
          f.deletedAt,
          f.createdAt,
          f.completedAt,
          f.uploadExpiresAt,
          f.blobKey,
          f.origin,
          f.createdByTokenId,
          f.createdByUserId,
          f.jobId,
          f.deleteAttempts,
          f.nextDeleteAt,
          f.lastDeleteError,
        ],
      );
    },
    async findInOrg(orgId, id) {
      const row = await one<FileRow>(pool, `SELECT f.* ${VISIBLE} WHERE f.org_id = $1 AND f.id = $2`, [orgId, id]);
      return row ? toFile(row) : null;
    },
    async findForTransfer(id) {
      const row = await one<FileRow & { binding_deleted: boolean }>(
        pool,
        `SELECT f.*, (b.deleted_at IS NOT NULL) AS binding_deleted
         FROM files f JOIN storage_bindings b ON b.id = f.binding_id WHERE f.id = $1`,
        [id],
      );
      return row ? { ...toFile(row), bindingDeleted: row.binding_deleted } : null;
    },
    async list(q) {
      const rows = await all<FileRow>(
        pool,
        `SELECT f.* ${VISIBLE} WHERE f.org_id = $1
           AND ($2::text[] IS NULL OR f.binding_id = ANY($2::text[]))
           AND ($3::text IS NULL OR f.binding_id = $3) AND ($4::text IS NULL OR f.status = $4)
         ORDER BY f.created_at DESC, f.seq DESC LIMIT $5`,
        [q.orgId, q.bindingIds, q.bindingId, q.status, q.limit],
      );
      return rows.map(toFile);
    },
    async findActiveInOrg(orgId, ids) {
      if (ids.length === 0) return [];
      const rows = await all<FileRow>(
        pool,
        `SELECT f.* ${VISIBLE} WHERE f.id = ANY($2::text[]) AND f.org_id = $1 AND f.status = 'active'`,
        [orgId, ids],
      );
      return rows.map(toFile);
    },
    async complete(id, done) {
      const changed = await run(
        pool,
        `UPDATE files SET status = 'active', size = $2, sha256 = $3, completed_at = $4, expires_at = $5
         WHERE id = $1 AND status = 'pending'`,
        [id, done.size, done.sha256, done.completedAt, done.expiresAt],
      );
      return changed === 1;
    },
    claimForDelete(id, now, leaseUntil) {
      return inTransaction(pool, async (tx): Promise<DeleteClaim> => {
        const row = await one<FileRow>(tx, 'SELECT * FROM files WHERE id = $1 FOR UPDATE', [id]);
        if (!row) return { outcome: 'not_found' };
        const file = toFile(row);
        if ((await inUse(tx, [id])).has(id)) return { outcome: 'in_use', file };
        if (file.status === 'deleted') return { outcome: 'unchanged', file };
        if (file.status === 'deleting' && file.nextDeleteAt !== null && file.nextDeleteAt > now) {
          return { outcome: 'unchanged', file };
        }
        await run(tx, "UPDATE files SET status = 'deleting', next_delete_at = $2 WHERE id = $1", [id, leaseUntil]);
        return { outcome: 'claimed', file: { ...file, status: 'deleting', nextDeleteAt: leaseUntil } };
      });
    },
    claimDue(d) {
      return inTransaction(pool, async (tx) => {
        // Rows another coordinator's sweep holds are skipped, not waited for.
        const due = await all<FileRow>(
          tx,
          `SELECT f.* FROM files f WHERE (
             (f.status = 'active' AND f.expires_at IS NOT NULL AND f.expires_at <= $1
               AND f.cleanup_rule IN ('ttl', 'on_job_end'))
             OR (f.status = 'pending' AND f.upload_expires_at <= $2)
             OR (f.status IN ('deleting', 'delete_failed') AND f.next_delete_at <= $1))
           AND NOT ${IN_USE}
           LIMIT $3 FOR UPDATE SKIP LOCKED`,
          [d.now, d.abandonedBefore, d.limit],
        );
        const used = await inUse(
          tx,
          due.map((r) => r.id),
        );
        const claimed = due.filter((r) => !used.has(r.id));
        if (claimed.length === 0) return [];
        await run(tx, "UPDATE files SET status = 'deleting', next_delete_at = $2 WHERE id = ANY($1::text[])", [
          claimed.map((r) => r.id),
          d.leaseUntil,
        ]);
        return claimed.map(
          (row) => ({ ...toFile(row), status: 'deleting', nextDeleteAt: d.leaseUntil }) satisfies StoredFile,
        );
      });
    },
    async markDeleted(id, at) {
      const changed = await run(
        pool,
        `UPDATE files SET status = 'deleted', deleted_at = $2, next_delete_at = NULL, last_delete_error = NULL
         WHERE id = $1 AND status = 'deleting'`,
        [id, at],
      );
      return changed === 1;
    },
    async markDeleteFailed(id, error, retryAt) {
      const row = await one<FileRow>(
        pool,
        `UPDATE files SET status = 'delete_failed', delete_attempts = delete_attempts + 1, last_delete_error = $2,
           next_delete_at = $3
         WHERE id = $1 AND status = 'deleting' RETURNING *`,
        [id, error.slice(0, 1000), retryAt],
      );
      return row ? toFile(row) : null;
    },
    async isInUse(id) {
      return (await inUse(pool, [id])).has(id);
    },
    async findBinding(bindingId) {
      const row = await one<BindingRow>(pool, `SELECT ${BINDING_COLUMNS} FROM storage_bindings WHERE id = $1`, [
        bindingId,
      ]);
      return row ? toBinding(row) : null;
    },
    async countUndeletedInBinding(bindingId) {
      const row = await one<{ n: number }>(
        pool,
        "SELECT count(*) AS n FROM files WHERE binding_id = $1 AND status <> 'deleted'",
        [bindingId],
      );
      return row?.n ?? 0;
    },
  };
}
