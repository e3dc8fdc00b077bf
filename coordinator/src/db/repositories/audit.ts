import type { ActorType, AuditEntryInput, AuditRepository } from '../../domain/model/audit.js';
import { parseJsonColumn } from '../../util/json.js';
import type { Db } from '../database.js';
import type { WriteExecutor } from '../writer/executor.js';

interface AuditRow {
  id: number;
  org_id: string | null;
  actor_type: ActorType;
  actor_id: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  metadata: string;
  created_at: string;
}

/** Audit inserts as a write operation of the group commit (db/writer/executor.ts). */
function createAuditWrites(db: Db) {
  const insert = db.prepare(
    `INSERT INTO audit_log (org_id, actor_type, actor_id, action, target_type, target_id, metadata, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  return {
    insertMany(entries: readonly AuditEntryInput[]): number {
      for (const e of entries) {
        insert.run(
          e.orgId,
          e.actorType,
          e.actorId,
          e.action,
          e.targetType ?? null,
          e.targetId ?? null,
          JSON.stringify(e.metadata ?? {}),
          e.createdAt,
        );
      }
      return entries.length;
    },
  };
}

export function createAuditRepository(db: Db, writes: WriteExecutor): AuditRepository {
  const audit = createAuditWrites(db);
  type ListParams = {
    orgId: string;
    action: string | null;
    actorType: string | null;
    actorId: string | null;
    targetType: string | null;
    targetId: string | null;
    createdAfter: string | null;
    createdBefore: string | null;
    before: number;
    limit: number;
  };
  // One query per index that leads the scan (the target's, or the organization's); every other
  // filter is a nullable parameter, so the SQL text is fixed.
  const listWhere = (leading: string) =>
    `SELECT * FROM audit_log WHERE ${leading}org_id = @orgId
       AND (@action IS NULL OR action = @action)
       AND (@actorType IS NULL OR actor_type = @actorType) AND (@actorId IS NULL OR actor_id = @actorId)
       AND (@targetType IS NULL OR target_type = @targetType) AND (@targetId IS NULL OR target_id = @targetId)
       AND (@createdAfter IS NULL OR created_at >= @createdAfter)
       AND (@createdBefore IS NULL OR created_at < @createdBefore)
       AND id < @before ORDER BY id DESC LIMIT @limit`;
  const list = db.prepare<[ListParams], AuditRow>(listWhere(''));
  const listByTarget = db.prepare<[ListParams], AuditRow>(listWhere('target_id = @targetId AND '));
  return {
    async insertMany(entries) {
      if (entries.length > 0) await writes.run(() => audit.insertMany(entries));
    },
    async list(orgId, q) {
      const params: ListParams = {
        orgId,
        action: q.action ?? null,
        actorType: q.actorType ?? null,
        actorId: q.actorId ?? null,
        targetType: q.targetType ?? null,
        targetId: q.targetId ?? null,
        createdAfter: q.createdAfter ?? null,
        createdBefore: q.createdBefore ?? null,
        before: q.before ?? Number.MAX_SAFE_INTEGER,
        limit: q.limit,
      };
      const statement = params.targetId !== null ? listByTarget : list;
      return statement.all(params).map((r) => ({
        id: r.id,
        orgId: r.org_id,
        actorType: r.actor_type,
        actorId: r.actor_id,
        action: r.action,
        targetType: r.target_type,
        targetId: r.target_id,
        metadata: parseJsonColumn<Record<string, unknown>>(r.metadata, 'audit_log.metadata') ?? {},
        createdAt: r.created_at,
      }));
    },
  };
}
