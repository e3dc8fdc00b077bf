import type {
  CleanupRule,
  DeleteClaim,
  FileOrigin,
  FileRepository,
  FileStatus,
  StoredFile,
} from '../../domain/model/files.js';
import { all, command, isSet, one, query, run, values, type Database, type Flow } from '../sql/index.js';
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

/**
 * Only into a binding not deleted, read under a share lock of its row (PostgreSQL): a binding's
 * deletion (storage-bindings.ts) locks it to count its files, so the two take turns and a binding
 * deleted never holds a file made at the same moment.
 */
const INSERT = command<StoredFile>(
  (d) => `INSERT INTO files (id, org_id, binding_id, filename, content_type, size, sha256, declared_size,
     declared_sha256, status, cleanup_rule, ttl_seconds, expires_at, deleted_at, created_at, completed_at,
     upload_expires_at, blob_key, origin, created_by_token_id, created_by_user_id, job_id, delete_attempts,
     next_delete_at, last_delete_error)
   SELECT @id, @orgId, @bindingId, @filename, @contentType, @size, @sha256, @declaredSize,
     @declaredSha256, @status, @cleanupRule, @ttlSeconds, @expiresAt, @deletedAt, @createdAt, @completedAt,
     @uploadExpiresAt, @blobKey, @origin, @createdByTokenId, @createdByUserId, @jobId, @deleteAttempts,
     @nextDeleteAt, @lastDeleteError
   WHERE EXISTS (SELECT 1 FROM storage_bindings WHERE id = @bindingId AND deleted_at IS NULL ${d.forShare})`,
);
const IN_ORG = query<FileRow, [string, string]>(`SELECT f.* ${VISIBLE} WHERE f.org_id = ? AND f.id = ?`);
const FOR_TRANSFER = query<FileRow & { binding_deleted: number }, [string]>(
  `SELECT f.*, (b.deleted_at IS NOT NULL) AS binding_deleted
   FROM files f JOIN storage_bindings b ON b.id = f.binding_id WHERE f.id = ?`,
);
interface ListParams {
  orgId: string;
  all: 1 | 0;
  bindingIds: string;
  bindingId: string | null;
  status: string | null;
  /** The position the page starts after (its first file is older): a file's created_at, then its key. */
  afterAt: string;
  afterKey: number;
  limit: number;
}
/** Above every stored position: the first page. */
const NEWEST = { createdAt: '9999-12-31T23:59:59.999Z', key: Number.MAX_SAFE_INTEGER };
/**
 * A page of the lists (GET /v1/storage/files, GET /v1/orgs/:orgId/files), newest first, led by
 * `lead`: the part of the WHERE clause an index serves. A page starts after the previous page's
 * last file, found by a seek, never counted from the newest (docs/storage.md, "list").
 */
const list = (lead: string) =>
  query<FileRow & { list_key: number }, ListParams>(
    (d) => `SELECT f.*, f.${d.insertionOrder} AS list_key ${VISIBLE} WHERE ${lead}
       AND (@all = 1 OR f.binding_id ${d.inJsonArray('@bindingIds')})
       AND (f.binding_id = @bindingId OR @bindingId IS NULL)
       AND (f.status = @status OR @status IS NULL)
       AND f.created_at <= @afterAt AND (f.created_at < @afterAt OR f.${d.insertionOrder} < @afterKey)
     ORDER BY f.created_at DESC, f.${d.insertionOrder} DESC
     LIMIT @limit`,
  );
/** Every file of the organization, newest first (files_org_created): a common status (active) too. */
const LIST = list('f.org_id = @orgId');
/**
 * The files of one status but active (files_org_status, migration 0050): a status few files have
 * (pending, deleting, delete_failed; deleted, where files are kept) no longer reads the whole
 * organization to fill a page. The literal term is the partial index's own: both databases use
 * the index only for a WHERE clause that names it.
 */
const LIST_BY_STATUS = list(`f.org_id = @orgId AND f.status = @status AND f.status <> 'active'`);
/** The files of one binding (files_binding_created): a small binding of a large organization. */
const LIST_BY_BINDING = list('f.binding_id = @bindingId AND f.org_id = @orgId');
const ACTIVE_ONE = query<FileRow, [string, string]>(
  `SELECT f.* ${VISIBLE} WHERE f.id = ? AND f.org_id = ? AND f.status = 'active'`,
);
// The ids first (CROSS JOIN keeps SQLite to that order): each file is looked up by its primary
// key, never by a scan of the organization's files.
const ACTIVE_IN = query<FileRow, [string, string]>(
  (d) => `SELECT f.* FROM (SELECT DISTINCT value FROM ${d.jsonArrayElements}(?)) AS ids CROSS JOIN files f
     JOIN storage_bindings b ON b.id = f.binding_id AND b.deleted_at IS NULL
   WHERE f.id = ids.value AND f.org_id = ? AND f.status = 'active'`,
);
const COMPLETE = command<{ id: string; size: number; sha256: string; completedAt: string; expiresAt: string | null }>(
  `UPDATE files SET status = 'active', size = @size, sha256 = @sha256, completed_at = @completedAt,
     expires_at = @expiresAt
   WHERE id = @id AND status = 'pending'`,
);
const FOR_DELETE = query<FileRow, [string]>((d) => `SELECT * FROM files WHERE id = ? ${d.forUpdate}`);
const IS_IN_USE = values<number, [string]>(`SELECT ${IN_USE} FROM files f WHERE f.id = ?`);
const IN_USE_AMONG = values<string, [string]>(
  (d) => `SELECT f.id FROM files f WHERE f.id ${d.inJsonArray('?')} AND ${IN_USE}`,
);
const SET_DELETING = command<[string, string]>(`UPDATE files SET status = 'deleting', next_delete_at = ? WHERE id = ?`);
const SET_ALL_DELETING = command<[string, string]>(
  (d) => `UPDATE files SET status = 'deleting', next_delete_at = ?
   WHERE id ${d.inJsonArray('?')}`,
);
// Rows another coordinator's sweep holds are skipped, not waited for.
const DUE = query<FileRow, { now: string; abandonedBefore: string; limit: number }>(
  (d) => `SELECT f.* FROM files f WHERE f.id IN (
     SELECT id FROM files WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= @now
       AND cleanup_rule IN ('ttl', 'on_job_end')
     UNION SELECT id FROM files WHERE status = 'pending' AND upload_expires_at <= @abandonedBefore
     UNION SELECT id FROM files WHERE status IN ('deleting', 'delete_failed') AND next_delete_at <= @now
   ) AND NOT ${IN_USE}
   -- Again on the row itself: PostgreSQL rechecks a row another sweeper claimed and committed
   -- meanwhile against the outer conditions only (not the id list read before), and skips it.
   AND ((f.status = 'active' AND f.expires_at <= @now) OR (f.status = 'pending' AND f.upload_expires_at <= @abandonedBefore)
     OR (f.status IN ('deleting', 'delete_failed') AND f.next_delete_at <= @now))
   LIMIT @limit ${d.forUpdateSkipLocked}`,
);
const MARK_DELETED = command<[string, string]>(
  `UPDATE files SET status = 'deleted', deleted_at = ?, next_delete_at = NULL, last_delete_error = NULL
   WHERE id = ? AND status = 'deleting'`,
);
const MARK_FAILED = query<FileRow, [string, string, string]>(
  `UPDATE files SET status = 'delete_failed', delete_attempts = delete_attempts + 1, last_delete_error = ?,
     next_delete_at = ?
   WHERE id = ? AND status = 'deleting' RETURNING *`,
);
const BINDING = query<BindingRow, [string]>(`SELECT ${BINDING_COLUMNS} FROM storage_bindings WHERE id = ?`);
/** On files_job: as many rows read as the job has files (a few). */
const OF_JOB = values<number, [string]>('SELECT count(*) FROM files WHERE job_id = ?');
const UNDELETED = values<number, [string]>(`SELECT COUNT(*) FROM files WHERE binding_id = ? AND status <> 'deleted'`);

/**
 * A file is moved to `deleting` under its row lock, and whether a release uses it is read after
 * the lock is held, in a statement of its own (on PostgreSQL, READ COMMITTED: a release committed
 * meanwhile is seen). A release's creation locks the file's row too (releases.ts), so a file is
 * never both claimed for deletion and made a release's artifact, whichever coordinators do the two.
 */
export function createFileRepository(db: Database): FileRepository {
  return {
    async insert(file) {
      return (await db.run(INSERT, file)) === 1;
    },
    async findInOrg(orgId, id) {
      const row = await db.one(IN_ORG, [orgId, id]);
      return row ? toFile(row) : null;
    },
    async findForTransfer(id) {
      const row = await db.one(FOR_TRANSFER, [id]);
      return row ? { ...toFile(row), bindingDeleted: isSet(row.binding_deleted) } : null;
    },
    async list(q) {
      const after = q.after ?? NEWEST;
      const statement =
        q.status !== null && q.status !== 'active' ? LIST_BY_STATUS : q.bindingId !== null ? LIST_BY_BINDING : LIST;
      const rows = await db.all(statement, {
        orgId: q.orgId,
        all: q.bindingIds === null ? 1 : 0,
        bindingIds: JSON.stringify(q.bindingIds ?? []),
        bindingId: q.bindingId,
        status: q.status,
        afterAt: after.createdAt,
        afterKey: after.key,
        limit: q.limit + 1,
      });
      const files = rows.slice(0, q.limit).map(toFile);
      const last = rows.length > q.limit ? rows[q.limit - 1]! : null;
      return { files, next: last && { createdAt: files[files.length - 1]!.createdAt, key: Number(last.list_key) } };
    },
    async findActiveInOrg(orgId, ids) {
      if (ids.length === 0) return [];
      if (ids.length === 1) {
        // The common case (one artifact, one input file) without the JSON array's cost.
        const row = await db.one(ACTIVE_ONE, [ids[0]!, orgId]);
        return row ? [toFile(row)] : [];
      }
      return (await db.all(ACTIVE_IN, [JSON.stringify(ids), orgId])).map(toFile);
    },
    async complete(id, done) {
      return (await db.run(COMPLETE, { id, ...done })) === 1;
    },
    claimForDelete(id, now, leaseUntil) {
      return db.transaction(
        function* (): Flow<DeleteClaim> {
          const row = yield* one(FOR_DELETE, [id]);
          if (!row) return { outcome: 'not_found' };
          const file = toFile(row);
          if ((yield* one(IS_IN_USE, [id])) === 1) return { outcome: 'in_use', file };
          if (file.status === 'deleted') return { outcome: 'unchanged', file };
          if (file.status === 'deleting' && file.nextDeleteAt !== null && file.nextDeleteAt > now) {
            return { outcome: 'unchanged', file };
          }
          yield* run(SET_DELETING, [leaseUntil, id]);
          return { outcome: 'claimed', file: { ...file, status: 'deleting', nextDeleteAt: leaseUntil } };
        },
        { immediate: true },
      );
    },
    claimDue(d) {
      return db.transaction(
        function* (): Flow<StoredFile[]> {
          const due = yield* all(DUE, { now: d.now, abandonedBefore: d.abandonedBefore, limit: d.limit });
          if (due.length === 0) return [];
          const used = new Set(yield* all(IN_USE_AMONG, [JSON.stringify(due.map((r) => r.id))]));
          const claimed = due.filter((r) => !used.has(r.id));
          if (claimed.length === 0) return [];
          yield* run(SET_ALL_DELETING, [d.leaseUntil, JSON.stringify(claimed.map((r) => r.id))]);
          return claimed.map((row) => ({ ...toFile(row), status: 'deleting', nextDeleteAt: d.leaseUntil }));
        },
        { immediate: true },
      );
    },
    async markDeleted(id, at) {
      return (await db.run(MARK_DELETED, [at, id])) === 1;
    },
    async markDeleteFailed(id, error, retryAt) {
      const row = await db.one(MARK_FAILED, [error.slice(0, 1000), retryAt, id]);
      return row ? toFile(row) : null;
    },
    async isInUse(id) {
      return (await db.one(IS_IN_USE, [id])) === 1;
    },
    async findBinding(bindingId) {
      const row = await db.one(BINDING, [bindingId]);
      return row ? toBinding(row) : null;
    },
    async countUndeletedInBinding(bindingId) {
      return (await db.one(UNDELETED, [bindingId])) ?? 0;
    },
    async countOfJob(jobId) {
      return (await db.one(OF_JOB, [jobId])) ?? 0;
    },
  };
}
