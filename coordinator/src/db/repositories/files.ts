import type {
  CleanupRule,
  DeleteClaim,
  FileOrigin,
  FileRepository,
  FileStatus,
  StoredFile,
} from '../../domain/model/files.js';
import type { Db } from '../database.js';
import { toBinding, type BindingRow } from './storage-bindings.js';

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

const IN_USE = `EXISTS (SELECT 1 FROM releases r WHERE r.artifact_file_id = f.id AND r.status <> 'yanked')`;

export function createFileRepository(db: Db): FileRepository {
  const insert = db.prepare(
    `INSERT INTO files (id, org_id, binding_id, filename, content_type, size, sha256, declared_size,
       declared_sha256, status, cleanup_rule, ttl_seconds, expires_at, deleted_at, created_at, completed_at,
       upload_expires_at, blob_key, origin, created_by_token_id, created_by_user_id, job_id, delete_attempts, next_delete_at,
       last_delete_error)
     VALUES (@id, @orgId, @bindingId, @filename, @contentType, @size, @sha256, @declaredSize,
       @declaredSha256, @status, @cleanupRule, @ttlSeconds, @expiresAt, @deletedAt, @createdAt, @completedAt,
       @uploadExpiresAt, @blobKey, @origin, @createdByTokenId, @createdByUserId, @jobId, @deleteAttempts, @nextDeleteAt,
       @lastDeleteError)`,
  );
  const inOrg = db.prepare<[string, string], FileRow>(
    `SELECT f.* FROM files f JOIN storage_bindings b ON b.id = f.binding_id AND b.deleted_at IS NULL
     WHERE f.org_id = ? AND f.id = ?`,
  );
  const forTransfer = db.prepare<[string], FileRow & { binding_deleted: number }>(
    `SELECT f.*, (b.deleted_at IS NOT NULL) AS binding_deleted
     FROM files f JOIN storage_bindings b ON b.id = f.binding_id WHERE f.id = ?`,
  );
  const list = db.prepare<
    { orgId: string; all: number; bindingIds: string; bindingId: string | null; status: string | null; limit: number },
    FileRow
  >(
    `SELECT f.* FROM files f JOIN storage_bindings b ON b.id = f.binding_id AND b.deleted_at IS NULL
     WHERE f.org_id = @orgId
       AND (@all = 1 OR f.binding_id IN (SELECT value FROM json_each(@bindingIds)))
       AND (@bindingId IS NULL OR f.binding_id = @bindingId)
       AND (@status IS NULL OR f.status = @status)
     ORDER BY f.created_at DESC, f.rowid DESC
     LIMIT @limit`,
  );
  // `+f.org_id`: look the files up by id (primary key), never by scanning the organization's files.
  const activeIn = db.prepare<[string, string], FileRow>(
    `SELECT f.* FROM files f JOIN storage_bindings b ON b.id = f.binding_id AND b.deleted_at IS NULL
     WHERE +f.org_id = ? AND f.status = 'active' AND f.id IN (SELECT value FROM json_each(?))`,
  );
  const activeOne = db.prepare<[string, string], FileRow>(
    `SELECT f.* FROM files f JOIN storage_bindings b ON b.id = f.binding_id AND b.deleted_at IS NULL
     WHERE f.id = ? AND f.org_id = ? AND f.status = 'active'`,
  );
  const complete = db.prepare(
    `UPDATE files SET status = 'active', size = @size, sha256 = @sha256, completed_at = @completedAt,
       expires_at = @expiresAt
     WHERE id = @id AND status = 'pending'`,
  );
  const byId = db.prepare<[string], FileRow & { in_use: number }>(
    `SELECT f.*, ${IN_USE} AS in_use FROM files f WHERE f.id = ?`,
  );
  const setDeleting = db.prepare<[string, string, string]>(
    `UPDATE files SET status = 'deleting', next_delete_at = ? WHERE id = ? AND status = ?`,
  );
  const claimForDelete = db.transaction((id: string, now: string, leaseUntil: string): DeleteClaim => {
    const row = byId.get(id);
    if (!row) return { outcome: 'not_found' };
    const file = toFile(row);
    if (row.in_use === 1) return { outcome: 'in_use', file };
    if (file.status === 'deleted') return { outcome: 'unchanged', file };
    if (file.status === 'deleting' && file.nextDeleteAt !== null && file.nextDeleteAt > now) {
      return { outcome: 'unchanged', file };
    }
    setDeleting.run(leaseUntil, id, file.status);
    return { outcome: 'claimed', file: { ...file, status: 'deleting', nextDeleteAt: leaseUntil } };
  });
  const due = db.prepare<{ now: string; abandonedBefore: string; limit: number }, FileRow>(
    `SELECT f.* FROM files f WHERE f.id IN (
       SELECT id FROM files WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= @now
         AND cleanup_rule IN ('ttl', 'on_job_end')
       UNION SELECT id FROM files WHERE status = 'pending' AND upload_expires_at <= @abandonedBefore
       UNION SELECT id FROM files WHERE status IN ('deleting', 'delete_failed') AND next_delete_at <= @now
     ) AND NOT ${IN_USE}
     LIMIT @limit`,
  );
  const claimDue = db.transaction(
    (d: { now: string; abandonedBefore: string; leaseUntil: string; limit: number }): StoredFile[] => {
      const rows = due.all({ now: d.now, abandonedBefore: d.abandonedBefore, limit: d.limit });
      return rows.map((row) => {
        setDeleting.run(d.leaseUntil, row.id, row.status);
        return { ...toFile(row), status: 'deleting', nextDeleteAt: d.leaseUntil } satisfies StoredFile;
      });
    },
  );
  const markDeleted = db.prepare(
    `UPDATE files SET status = 'deleted', deleted_at = ?, next_delete_at = NULL, last_delete_error = NULL
     WHERE id = ? AND status = 'deleting'`,
  );
  const markFailed = db.prepare<[string, string, string], FileRow>(
    `UPDATE files SET status = 'delete_failed', delete_attempts = delete_attempts + 1, last_delete_error = ?,
       next_delete_at = ?
     WHERE id = ? AND status = 'deleting' RETURNING *`,
  );
  const inUse = db.prepare<[string], { n: number }>(`SELECT ${IN_USE} AS n FROM files f WHERE f.id = ?`);
  const binding = db.prepare<[string], BindingRow>(
    'SELECT id, org_id, name, backend, config, is_default, created_at FROM storage_bindings WHERE id = ?',
  );
  const undeleted = db.prepare<[string], { n: number }>(
    `SELECT COUNT(*) AS n FROM files WHERE binding_id = ? AND status <> 'deleted'`,
  );

  return {
    async insert(file) {
      insert.run(file);
    },
    async findInOrg(orgId, id) {
      const row = inOrg.get(orgId, id);
      return row ? toFile(row) : null;
    },
    async findForTransfer(id) {
      const row = forTransfer.get(id);
      return row ? { ...toFile(row), bindingDeleted: row.binding_deleted === 1 } : null;
    },
    async list(q) {
      return list
        .all({
          orgId: q.orgId,
          all: q.bindingIds === null ? 1 : 0,
          bindingIds: JSON.stringify(q.bindingIds ?? []),
          bindingId: q.bindingId,
          status: q.status,
          limit: q.limit,
        })
        .map(toFile);
    },
    async findActiveInOrg(orgId, ids) {
      if (ids.length === 0) return [];
      if (ids.length === 1) {
        // The common case (one artifact, one input file) without json_each's cost.
        const row = activeOne.get(ids[0]!, orgId);
        return row ? [toFile(row)] : [];
      }
      return activeIn.all(orgId, JSON.stringify(ids)).map(toFile);
    },
    async complete(id, done) {
      return complete.run({ id, ...done }).changes === 1;
    },
    async claimForDelete(id, now, leaseUntil) {
      return claimForDelete.immediate(id, now, leaseUntil);
    },
    async claimDue(d) {
      return claimDue.immediate(d);
    },
    async markDeleted(id, at) {
      return markDeleted.run(at, id).changes === 1;
    },
    async markDeleteFailed(id, error, retryAt) {
      const row = markFailed.get(error.slice(0, 1000), retryAt, id);
      return row ? toFile(row) : null;
    },
    async isInUse(id) {
      return (inUse.get(id)?.n ?? 0) === 1;
    },
    async findBinding(bindingId) {
      const r = binding.get(bindingId);
      return r ? toBinding(r) : null;
    },
    async countUndeletedInBinding(bindingId) {
      return undeleted.get(bindingId)?.n ?? 0;
    },
  };
}
