import type {
  ChatProvider,
  CronMissedPolicy,
  CronOverlapPolicy,
  NotifyOn,
  Trigger,
  TriggerLimit,
  TriggerLimitRefusal,
  TriggerLimits,
  TriggerRepository,
  TriggerType,
} from '../../../domain/model/triggers.js';
import type { PgPool, Queryable } from '../pool.js';
import { all, json, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

interface TriggerRow {
  id: string;
  org_id: string;
  name: string;
  type: TriggerType;
  agent_id: string;
  scope_type: 'workflow' | 'agent';
  workflow_name: string | null;
  response_mode: 'async' | 'sync';
  response_timeout_ms: number;
  allowed_refs: string[] | null;
  allow_debug: boolean;
  notify_provider: ChatProvider | null;
  notify_team_id: string | null;
  notify_channel_id: string | null;
  notify_on: NotifyOn;
  cron_expression: string | null;
  cron_timezone: string | null;
  cron_enabled: boolean | null;
  cron_missed_policy: CronMissedPolicy | null;
  cron_overlap_policy: CronOverlapPolicy | null;
  run_params: Record<string, unknown> | null;
  run_ref: string | null;
  cron_since: string | null;
  chat_team_id: string | null;
  chat_channel_id: string | null;
  chat_keyword: string | null;
  chat_allowed_user_ids: string[] | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

const toTrigger = (r: TriggerRow): Trigger => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  type: r.type,
  agentId: r.agent_id,
  scopeType: r.scope_type,
  workflowName: r.workflow_name,
  responseMode: r.response_mode,
  responseTimeoutMs: r.response_timeout_ms,
  allowedRefs: r.allowed_refs,
  allowDebug: r.allow_debug,
  notifyProvider: r.notify_provider,
  notifyTeamId: r.notify_team_id,
  notifyChannelId: r.notify_channel_id,
  notifyOn: r.notify_on,
  cronExpression: r.cron_expression,
  cronTimezone: r.cron_timezone,
  cronEnabled: r.cron_enabled,
  cronMissedPolicy: r.cron_missed_policy,
  cronOverlapPolicy: r.cron_overlap_policy,
  params: r.run_params,
  ref: r.run_ref,
  cronSince: r.cron_since,
  chatTeamId: r.chat_team_id,
  chatChannelId: r.chat_channel_id,
  chatKeyword: r.chat_keyword,
  chatAllowedUserIds: r.chat_allowed_user_ids,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** The columns a trigger's configuration is, in the order of `configuration` below. */
const CONFIGURATION = [
  'name',
  'type',
  'agent_id',
  'scope_type',
  'workflow_name',
  'response_mode',
  'response_timeout_ms',
  'allowed_refs',
  'allow_debug',
  'notify_provider',
  'notify_team_id',
  'notify_channel_id',
  'notify_on',
  'cron_expression',
  'cron_timezone',
  'cron_enabled',
  'cron_missed_policy',
  'cron_overlap_policy',
  'run_params',
  'run_ref',
  'cron_since',
  'chat_team_id',
  'chat_channel_id',
  'chat_keyword',
  'chat_allowed_user_ids',
  'updated_at',
];

const configuration = (t: Trigger): unknown[] => [
  t.name,
  t.type,
  t.agentId,
  t.scopeType,
  t.workflowName,
  t.responseMode,
  t.responseTimeoutMs,
  json(t.allowedRefs),
  t.allowDebug,
  t.notifyProvider,
  t.notifyTeamId,
  t.notifyChannelId,
  t.notifyOn,
  t.cronExpression,
  t.cronTimezone,
  t.cronEnabled,
  t.cronMissedPolicy,
  t.cronOverlapPolicy,
  json(t.params),
  t.ref,
  t.cronSince,
  t.chatTeamId,
  t.chatChannelId,
  t.chatKeyword,
  json(t.chatAllowedUserIds),
  t.updatedAt,
];

const N = CONFIGURATION.length;
const INSERT_SQL = `INSERT INTO triggers (id, org_id, ${CONFIGURATION.join(', ')}, created_by, created_at)
  VALUES (${Array.from({ length: N + 4 }, (_, i) => `$${i + 1}`).join(', ')})`;
const UPDATE_SQL = `UPDATE triggers SET ${CONFIGURATION.map((c, i) => `${c} = $${i + 3}`).join(', ')}
  WHERE id = $1 AND org_id = $2 AND deleted_at IS NULL`;

export function createTriggerRepository(pool: PgPool, limitRefusal: TriggerLimitRefusal): TriggerRepository {
  const list = async (sql: string, values: unknown[]) => (await all<TriggerRow>(pool, sql, values)).map(toTrigger);
  /**
   * Writes `t` unless it would pass one of `limits`. The organization's row is locked first, so
   * that the writes of one organization that count (on every coordinator) take turns: two of them
   * cannot both see the last place free.
   */
  const writeWithin = async (
    t: Trigger,
    limits: TriggerLimits | undefined,
    write: (db: Queryable) => Promise<unknown>,
    inserting: boolean,
  ): Promise<TriggerLimit | null> => {
    if (!limits) {
      await write(pool);
      return null;
    }
    return inTransaction(pool, async (tx) => {
      await run(tx, 'SELECT 1 FROM orgs WHERE id = $1 FOR NO KEY UPDATE', [t.orgId]);
      const stored = inserting
        ? null
        : await one<Pick<TriggerRow, 'type' | 'cron_enabled'>>(
            tx,
            'SELECT type, cron_enabled FROM triggers WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL',
            [t.orgId, t.id],
          );
      // An update of a trigger deleted meanwhile writes nothing: nothing to refuse.
      if (!inserting && !stored) return null;
      const others = await one<TriggerLimits>(
        tx,
        `SELECT count(*)::int AS triggers,
           (count(*) FILTER (WHERE type = 'cron' AND cron_enabled))::int AS "enabledCron"
         FROM triggers WHERE org_id = $1 AND id != $2 AND deleted_at IS NULL`,
        [t.orgId, t.id],
      );
      const before = stored ? { type: stored.type, cronEnabled: stored.cron_enabled === true } : null;
      const refused = limitRefusal(before, t, others ?? { triggers: 0, enabledCron: 0 }, limits);
      if (refused) return refused;
      await write(tx);
      return null;
    });
  };
  return {
    insert(t, limits) {
      return writeWithin(
        t,
        limits,
        (db) => run(db, INSERT_SQL, [t.id, t.orgId, ...configuration(t), t.createdBy, t.createdAt]),
        true,
      );
    },
    update(t, limits) {
      return writeWithin(t, limits, (db) => run(db, UPDATE_SQL, [t.id, t.orgId, ...configuration(t)]), false);
    },
    async findById(id) {
      const row = await one<TriggerRow>(pool, 'SELECT * FROM triggers WHERE id = $1 AND deleted_at IS NULL', [id]);
      return row ? toTrigger(row) : null;
    },
    async findInOrg(orgId, id) {
      const row = await one<TriggerRow>(
        pool,
        'SELECT * FROM triggers WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL',
        [orgId, id],
      );
      return row ? toTrigger(row) : null;
    },
    listInChatChannel(orgId, provider, teamId, channelId) {
      return list(
        `SELECT * FROM triggers WHERE type = $1 AND chat_team_id = $2 AND chat_channel_id = $3 AND org_id = $4
           AND deleted_at IS NULL AND chat_team_id IS NOT NULL
         ORDER BY chat_keyword, created_at`,
        [provider, teamId, channelId, orgId],
      );
    },
    listEnabledCron() {
      return list("SELECT * FROM triggers WHERE type = 'cron' AND cron_enabled AND deleted_at IS NULL", []);
    },
    listByOrg(orgId) {
      return list('SELECT * FROM triggers WHERE org_id = $1 AND deleted_at IS NULL ORDER BY created_at, seq', [orgId]);
    },
    async listByIds(orgId, ids) {
      if (ids.length === 0) return [];
      return list(
        `SELECT * FROM triggers WHERE org_id = $1 AND id = ANY($2::text[]) AND deleted_at IS NULL
         ORDER BY created_at, seq`,
        [orgId, ids],
      );
    },
    async softDelete(orgId, id, at) {
      const changed = await run(
        pool,
        'UPDATE triggers SET deleted_at = $1 WHERE org_id = $2 AND id = $3 AND deleted_at IS NULL',
        [at, orgId, id],
      );
      return changed === 1;
    },
  };
}
