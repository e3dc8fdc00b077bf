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
  const list = db.prepare<[string, string | null, string | null, number, number], AuditRow>(
    `SELECT * FROM audit_log WHERE org_id = ? AND (? IS NULL OR action = ?) AND id < ?
     ORDER BY id DESC LIMIT ?`,
  );
  return {
    async insertMany(entries) {
      if (entries.length > 0) await writes.run(() => audit.insertMany(entries));
    },
    async list(orgId, q) {
      const action = q.action ?? null;
      return list.all(orgId, action, action, q.before ?? Number.MAX_SAFE_INTEGER, q.limit).map((r) => ({
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
