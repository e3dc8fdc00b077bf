import type { ActorType, AuditEntryInput, AuditRepository } from '../../../domain/model/audit.js';
import type { PgPool, Queryable } from '../pool.js';
import { all, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

interface AuditRow {
  id: number;
  org_id: string | null;
  actor_type: ActorType;
  actor_id: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  metadata: Record<string, unknown> | null;
  created_at: string;
}

const COLUMNS = 8;
/** Rows per INSERT: a statement takes at most 65,535 parameters. */
const ROWS_PER_INSERT = 1000;

/** One INSERT of `entries`: VALUES ($1, ..., $8), ($9, ...), ... */
function insert(db: Queryable, entries: readonly AuditEntryInput[]) {
  const values = entries
    .map((_, i) => `(${Array.from({ length: COLUMNS }, (_, c) => `$${i * COLUMNS + c + 1}`).join(', ')})`)
    .join(', ');
  return run(
    db,
    `INSERT INTO audit_log (org_id, actor_type, actor_id, action, target_type, target_id, metadata, created_at)
     VALUES ${values}`,
    entries.flatMap((e) => [
      e.orgId,
      e.actorType,
      e.actorId,
      e.action,
      e.targetType ?? null,
      e.targetId ?? null,
      JSON.stringify(e.metadata ?? {}),
      e.createdAt,
    ]),
  );
}

export function createAuditRepository(pool: PgPool): AuditRepository {
  return {
    async insertMany(entries) {
      if (entries.length === 0) return;
      if (entries.length <= ROWS_PER_INSERT) {
        await insert(pool, entries);
        return;
      }
      await inTransaction(pool, async (tx) => {
        for (let i = 0; i < entries.length; i += ROWS_PER_INSERT)
          await insert(tx, entries.slice(i, i + ROWS_PER_INSERT));
      });
    },
    async list(orgId, q) {
      const rows = await all<AuditRow>(
        pool,
        `SELECT * FROM audit_log WHERE org_id = $1
           AND ($2::text IS NULL OR action = $2) AND ($3::text IS NULL OR actor_type = $3)
           AND ($4::text IS NULL OR actor_id = $4) AND ($5::text IS NULL OR target_type = $5)
           AND ($6::text IS NULL OR target_id = $6)
           AND ($7::timestamptz IS NULL OR created_at >= $7) AND ($8::timestamptz IS NULL OR created_at < $8)
           AND id < $9 ORDER BY id DESC LIMIT $10`,
        [
          orgId,
          q.action ?? null,
          q.actorType ?? null,
          q.actorId ?? null,
          q.targetType ?? null,
          q.targetId ?? null,
          q.createdAfter ?? null,
          q.createdBefore ?? null,
          q.before ?? Number.MAX_SAFE_INTEGER,
          q.limit,
        ],
      );
      return rows.map((r) => ({
        id: r.id,
        orgId: r.org_id,
        actorType: r.actor_type,
        actorId: r.actor_id,
        action: r.action,
        targetType: r.target_type,
        targetId: r.target_id,
        metadata: r.metadata ?? {},
        createdAt: r.created_at,
      }));
    },
  };
}
