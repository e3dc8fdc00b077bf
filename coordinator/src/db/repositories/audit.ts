import type { ActorType, AuditEntryInput, AuditRepository } from '../../domain/model/audit.js';
import { parseJsonColumn } from '../../util/json.js';
import { command, json, query, run, type Database, type Flow } from '../sql/index.js';

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

const COLUMNS = 'org_id, actor_type, actor_id, action, target_type, target_id, metadata, created_at';
const INSERT = command(`INSERT INTO audit_log (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
// Several entries in one statement, from one parameter however many they are: a JSON array of
// rows in INSERT's order. PostgreSQL parses it once (jsonb) and casts where a column is not text.
const INSERT_ALL = command<[string]>((d) =>
  d.name === 'sqlite'
    ? `INSERT INTO audit_log (${COLUMNS})
       SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7
       FROM json_each(?)`
    : `INSERT INTO audit_log (${COLUMNS})
       SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, (value ->> 6)::json,
         (value ->> 7)::timestamptz
       FROM jsonb_array_elements(?)`,
);

const row = (e: AuditEntryInput) => [
  e.orgId,
  e.actorType,
  e.actorId,
  e.action,
  e.targetType ?? null,
  e.targetId ?? null,
  json(e.metadata ?? {}),
  e.createdAt,
];

/** One statement, so written whole or not at all. */
function* insertAll(entries: readonly AuditEntryInput[]): Flow<void> {
  if (entries.length === 1) yield* run(INSERT, row(entries[0]!));
  else if (entries.length > 1) yield* run(INSERT_ALL, [JSON.stringify(entries.map(row))]);
}

interface ListParams {
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
}

// One query per index that leads the scan (the target's, or the organization's); every other
// filter is a nullable parameter, so the SQL text is fixed. Each is compared with its column before
// it is tested for NULL: PostgreSQL takes a parameter's type from its first use.
const listWhere = (leading: string) =>
  query<AuditRow, ListParams>(
    `SELECT * FROM audit_log WHERE ${leading}org_id = @orgId
       AND (action = @action OR @action IS NULL)
       AND (actor_type = @actorType OR @actorType IS NULL) AND (actor_id = @actorId OR @actorId IS NULL)
       AND (target_type = @targetType OR @targetType IS NULL) AND (target_id = @targetId OR @targetId IS NULL)
       AND (created_at >= @createdAfter OR @createdAfter IS NULL)
       AND (created_at < @createdBefore OR @createdBefore IS NULL)
       AND id < @before ORDER BY id DESC LIMIT @limit`,
  );
const LIST = listWhere('');
const LIST_BY_TARGET = listWhere('target_id = @targetId AND ');
/** The action of the log's hot write, an API token's discovery call: most entries of a busy organization. */
const DISCOVERY = 'api_token.discover';
// A filter no discovery entry can meet walks the index of the other entries (migration 0051), whose
// condition the statement states as the index does.
const LIST_BEYOND_DISCOVERY = listWhere(`action <> '${DISCOVERY}' AND `);

/** Whether no discovery entry can meet the filter: another action, an actor other than a token, a target. */
const beyondDiscovery = (p: ListParams) =>
  (p.action !== null && p.action !== DISCOVERY) ||
  (p.actorType !== null && p.actorType !== 'api_token') ||
  p.targetType !== null;

export function createAuditRepository(db: Database): AuditRepository {
  return {
    insertMany(entries) {
      return this.insertTaken(() => entries);
    },
    async insertTaken(take) {
      // A hot write: on SQLite in the group commit; on PostgreSQL one statement, without a transaction.
      await db.write(() => insertAll(take()), { atomic: false });
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
      const statement =
        params.targetId !== null ? LIST_BY_TARGET : beyondDiscovery(params) ? LIST_BEYOND_DISCOVERY : LIST;
      const rows = await db.all(statement, params);
      return rows.map((r) => ({
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
