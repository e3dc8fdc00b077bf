import type {
  ChatProvider,
  CronMissedPolicy,
  CronOverlapPolicy,
  Fanout,
  ListedTrigger,
  NotifyOn,
  Trigger,
  TriggerWrite,
  TriggerLimitRefusal,
  TriggerLimits,
  TriggerRepository,
  TriggerType,
} from '../../domain/model/triggers.js';
import { mapSoundRows, parseJsonColumn } from '../../util/json.js';
import {
  command,
  flag,
  flagOrNull,
  isSet,
  json,
  one,
  query,
  run,
  type Database,
  type Flow,
  type Query,
} from '../sql/index.js';
import { lockOrg } from './parent-locks.js';

interface TriggerRow {
  id: string;
  org_id: string;
  name: string;
  type: TriggerType;
  agent_id: string | null;
  agent_selector: string | null;
  fanout: Fanout | null;
  max_parallel: number | null;
  scope_type: 'workflow' | 'agent';
  workflow_name: string | null;
  response_mode: 'async' | 'sync';
  response_timeout_ms: number;
  allowed_refs: string | null;
  allow_debug: number;
  notify_provider: ChatProvider | null;
  notify_team_id: string | null;
  notify_channel_id: string | null;
  notify_on: NotifyOn;
  cron_expression: string | null;
  cron_timezone: string | null;
  cron_enabled: number | null;
  cron_missed_policy: CronMissedPolicy | null;
  cron_overlap_policy: CronOverlapPolicy | null;
  run_params: string | null;
  run_ref: string | null;
  cron_since: string | null;
  chat_team_id: string | null;
  chat_channel_id: string | null;
  chat_keyword: string | null;
  chat_allowed_user_ids: string | null;
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
  agentSelector: r.agent_selector,
  fanout: r.fanout,
  maxParallel: r.max_parallel,
  scopeType: r.scope_type,
  workflowName: r.workflow_name,
  responseMode: r.response_mode,
  responseTimeoutMs: r.response_timeout_ms,
  allowedRefs: parseJsonColumn<string[]>(r.allowed_refs, 'triggers.allowed_refs'),
  allowDebug: isSet(r.allow_debug),
  notifyProvider: r.notify_provider,
  notifyTeamId: r.notify_team_id,
  notifyChannelId: r.notify_channel_id,
  notifyOn: r.notify_on,
  cronExpression: r.cron_expression,
  cronTimezone: r.cron_timezone,
  cronEnabled: r.cron_enabled === null ? null : isSet(r.cron_enabled),
  cronMissedPolicy: r.cron_missed_policy,
  cronOverlapPolicy: r.cron_overlap_policy,
  params: parseJsonColumn<Record<string, unknown>>(r.run_params, 'triggers.run_params'),
  ref: r.run_ref,
  cronSince: r.cron_since,
  chatTeamId: r.chat_team_id,
  chatChannelId: r.chat_channel_id,
  chatKeyword: r.chat_keyword,
  chatAllowedUserIds: parseJsonColumn<string[]>(r.chat_allowed_user_ids, 'triggers.chat_allowed_user_ids'),
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A trigger as the named parameters of INSERT and UPDATE. */
const toParams = (t: Trigger) => ({
  ...t,
  allowedRefs: json(t.allowedRefs),
  allowDebug: flag(t.allowDebug),
  cronEnabled: flagOrNull(t.cronEnabled),
  params: json(t.params),
  chatAllowedUserIds: json(t.chatAllowedUserIds),
});
type TriggerParams = ReturnType<typeof toParams>;

const INSERT = command<TriggerParams>(
  `INSERT INTO triggers (id, org_id, name, type, agent_id, scope_type, workflow_name, response_mode,
     response_timeout_ms, allowed_refs, allow_debug, notify_provider, notify_team_id, notify_channel_id, notify_on,
     cron_expression, cron_timezone, cron_enabled, cron_missed_policy, cron_overlap_policy, run_params, run_ref,
     cron_since, chat_team_id, chat_channel_id, chat_keyword, chat_allowed_user_ids, created_by, created_at,
     updated_at, agent_selector, fanout, max_parallel)
   VALUES (@id, @orgId, @name, @type, @agentId, @scopeType, @workflowName, @responseMode,
     @responseTimeoutMs, @allowedRefs, @allowDebug, @notifyProvider, @notifyTeamId, @notifyChannelId, @notifyOn,
     @cronExpression, @cronTimezone, @cronEnabled, @cronMissedPolicy, @cronOverlapPolicy, @params, @ref,
     @cronSince, @chatTeamId, @chatChannelId, @chatKeyword, @chatAllowedUserIds, @createdBy, @createdAt,
     @updatedAt, @agentSelector, @fanout, @maxParallel)`,
);
const UPDATE = command<TriggerParams>(
  `UPDATE triggers SET name = @name, type = @type, agent_id = @agentId, scope_type = @scopeType,
     workflow_name = @workflowName, response_mode = @responseMode, response_timeout_ms = @responseTimeoutMs,
     allowed_refs = @allowedRefs, allow_debug = @allowDebug, notify_provider = @notifyProvider,
     notify_team_id = @notifyTeamId, notify_channel_id = @notifyChannelId, notify_on = @notifyOn,
     cron_expression = @cronExpression, cron_timezone = @cronTimezone, cron_enabled = @cronEnabled,
     cron_missed_policy = @cronMissedPolicy, cron_overlap_policy = @cronOverlapPolicy, run_params = @params,
     run_ref = @ref, cron_since = @cronSince, chat_team_id = @chatTeamId, chat_channel_id = @chatChannelId,
     chat_keyword = @chatKeyword, chat_allowed_user_ids = @chatAllowedUserIds, updated_at = @updatedAt,
     agent_selector = @agentSelector, fanout = @fanout, max_parallel = @maxParallel
   WHERE id = @id AND org_id = @orgId AND deleted_at IS NULL`,
);
const BY_ID = query<TriggerRow, [string]>('SELECT * FROM triggers WHERE id = ? AND deleted_at IS NULL');
const IN_ORG = query<TriggerRow, [string, string]>(
  'SELECT * FROM triggers WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
);
/** A listed trigger's row: its insertion key too (after its creation instant, its place in the list). */
type ListedRow = TriggerRow & { list_key: number };
const BY_ORG = query<ListedRow, [string]>(
  (d) => `SELECT *, ${d.insertionOrder} AS list_key FROM triggers WHERE org_id = ? AND deleted_at IS NULL
    ORDER BY created_at, ${d.insertionOrder}`,
);
const BY_IDS = query<ListedRow, [string, string]>(
  (d) => `SELECT *, ${d.insertionOrder} AS list_key FROM triggers
    WHERE org_id = ? AND id ${d.inJsonArray('?')} AND deleted_at IS NULL
    ORDER BY created_at, ${d.insertionOrder}`,
);
const ENABLED_CRON = query<TriggerRow, []>(
  "SELECT * FROM triggers WHERE type = 'cron' AND cron_enabled = TRUE AND deleted_at IS NULL",
);
const SOFT_DELETE = command<[string, string, string]>(
  'UPDATE triggers SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
);
const IN_CHANNEL = query<TriggerRow, [string, string, string, string]>(
  (d) => `SELECT * FROM triggers WHERE type = ? AND chat_team_id = ? AND chat_channel_id = ? AND org_id = ?
     AND deleted_at IS NULL AND chat_team_id IS NOT NULL
   ORDER BY chat_keyword${d.byteOrder}, created_at`,
);
const KIND_OF = query<Pick<TriggerRow, 'type' | 'cron_enabled' | 'updated_at'>, [string, string]>(
  'SELECT type, cron_enabled, updated_at FROM triggers WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
);
const OTHERS = query<TriggerLimits, [string, string]>(
  `SELECT count(*) AS triggers, count(*) FILTER (WHERE type = 'cron' AND cron_enabled = TRUE) AS "enabledCron"
   FROM triggers WHERE org_id = ? AND id != ? AND deleted_at IS NULL`,
);

export function createTriggerRepository(db: Database, limitRefusal: TriggerLimitRefusal): TriggerRepository {
  /**
   * Writes `trigger` unless it would pass one of `limits`, counted in the same transaction, after
   * the organization's row is locked (on every coordinator, two writes cannot both see the last
   * place free), or unless the stored trigger is no longer the one of `since` (its `updatedAt`).
   */
  function* writeWithin(
    trigger: Trigger,
    limits: TriggerLimits | undefined,
    inserting: boolean,
    since: string | undefined,
  ): Flow<TriggerWrite> {
    yield* lockOrg(trigger.orgId);
    const stored = inserting ? null : yield* one(KIND_OF, [trigger.orgId, trigger.id]);
    if (!inserting) {
      // Deleted meanwhile: nothing to write, nothing to refuse, unless the change was made from it.
      if (!stored) return since === undefined ? null : 'changed';
      if (since !== undefined && stored.updated_at !== since) return 'changed';
    }
    if (limits) {
      const before = stored ? { type: stored.type, cronEnabled: isSet(stored.cron_enabled ?? 0) } : null;
      const others = (yield* one(OTHERS, [trigger.orgId, trigger.id])) ?? { triggers: 0, enabledCron: 0 };
      const refused = limitRefusal(before, trigger, others, limits);
      if (refused) return refused;
    }
    yield* run(inserting ? INSERT : UPDATE, toParams(trigger));
    return null;
  }
  const write = async (trigger: Trigger, limits: TriggerLimits | undefined, inserting: boolean, since?: string) => {
    if (limits || since !== undefined) return db.transaction(() => writeWithin(trigger, limits, inserting, since));
    await db.run(inserting ? INSERT : UPDATE, toParams(trigger));
    return null;
  };
  const list = async <P extends readonly unknown[]>(statement: Query<TriggerRow, P>, params: P) =>
    (await db.all(statement, params)).map(toTrigger);
  const listed = async <P extends readonly unknown[]>(statement: Query<ListedRow, P>, params: P) =>
    (await db.all(statement, params)).map((r): ListedTrigger => ({ ...toTrigger(r), listKey: r.list_key }));
  return {
    async insert(trigger, limits) {
      const written = await write(trigger, limits, true);
      // Made from no stored trigger, an insert is never `changed`.
      return written === 'changed' ? null : written;
    },
    update(trigger, limits, since) {
      return write(trigger, limits, false, since);
    },
    async findById(id) {
      const row = await db.one(BY_ID, [id]);
      return row ? toTrigger(row) : null;
    },
    async findInOrg(orgId, id) {
      const row = await db.one(IN_ORG, [orgId, id]);
      return row ? toTrigger(row) : null;
    },
    listInChatChannel(orgId, provider, teamId, channelId) {
      return list(IN_CHANNEL, [provider, teamId, channelId, orgId]);
    },
    async listEnabledCron() {
      const { sound, damaged } = mapSoundRows(await db.all(ENABLED_CRON, []), toTrigger, (r) => r.id);
      return { triggers: sound, damaged };
    },
    listByOrg(orgId) {
      return listed(BY_ORG, [orgId]);
    },
    async listByIds(orgId, ids) {
      if (ids.length === 0) return [];
      return listed(BY_IDS, [orgId, JSON.stringify(ids)]);
    },
    async softDelete(orgId, id, at) {
      return (await db.run(SOFT_DELETE, [at, orgId, id])) === 1;
    },
  };
}
