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
} from '../../domain/model/triggers.js';
import { parseJsonColumn } from '../../util/json.js';
import type { Db } from '../database.js';

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
  scopeType: r.scope_type,
  workflowName: r.workflow_name,
  responseMode: r.response_mode,
  responseTimeoutMs: r.response_timeout_ms,
  allowedRefs: parseJsonColumn<string[]>(r.allowed_refs, 'triggers.allowed_refs'),
  allowDebug: r.allow_debug === 1,
  notifyProvider: r.notify_provider,
  notifyTeamId: r.notify_team_id,
  notifyChannelId: r.notify_channel_id,
  notifyOn: r.notify_on,
  cronExpression: r.cron_expression,
  cronTimezone: r.cron_timezone,
  cronEnabled: r.cron_enabled === null ? null : r.cron_enabled === 1,
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

const toParams = (t: Trigger) => ({
  ...t,
  allowedRefs: t.allowedRefs === null ? null : JSON.stringify(t.allowedRefs),
  allowDebug: t.allowDebug ? 1 : 0,
  cronEnabled: t.cronEnabled === null ? null : t.cronEnabled ? 1 : 0,
  params: t.params === null ? null : JSON.stringify(t.params),
  chatAllowedUserIds: t.chatAllowedUserIds === null ? null : JSON.stringify(t.chatAllowedUserIds),
});

export function createTriggerRepository(db: Db, limitRefusal: TriggerLimitRefusal): TriggerRepository {
  const insert = db.prepare(
    `INSERT INTO triggers (id, org_id, name, type, agent_id, scope_type, workflow_name, response_mode,
       response_timeout_ms, allowed_refs, allow_debug, notify_provider, notify_team_id, notify_channel_id, notify_on,
       cron_expression, cron_timezone, cron_enabled, cron_missed_policy, cron_overlap_policy, run_params, run_ref,
       cron_since, chat_team_id, chat_channel_id, chat_keyword, chat_allowed_user_ids, created_by, created_at,
       updated_at)
     VALUES (@id, @orgId, @name, @type, @agentId, @scopeType, @workflowName, @responseMode,
       @responseTimeoutMs, @allowedRefs, @allowDebug, @notifyProvider, @notifyTeamId, @notifyChannelId, @notifyOn,
       @cronExpression, @cronTimezone, @cronEnabled, @cronMissedPolicy, @cronOverlapPolicy, @params, @ref,
       @cronSince, @chatTeamId, @chatChannelId, @chatKeyword, @chatAllowedUserIds, @createdBy, @createdAt,
       @updatedAt)`,
  );
  const update = db.prepare(
    `UPDATE triggers SET name = @name, type = @type, agent_id = @agentId, scope_type = @scopeType,
       workflow_name = @workflowName, response_mode = @responseMode, response_timeout_ms = @responseTimeoutMs,
       allowed_refs = @allowedRefs, allow_debug = @allowDebug, notify_provider = @notifyProvider,
       notify_team_id = @notifyTeamId, notify_channel_id = @notifyChannelId, notify_on = @notifyOn,
       cron_expression = @cronExpression, cron_timezone = @cronTimezone, cron_enabled = @cronEnabled,
       cron_missed_policy = @cronMissedPolicy, cron_overlap_policy = @cronOverlapPolicy, run_params = @params,
       run_ref = @ref, cron_since = @cronSince, chat_team_id = @chatTeamId, chat_channel_id = @chatChannelId, chat_keyword = @chatKeyword,
       chat_allowed_user_ids = @chatAllowedUserIds, updated_at = @updatedAt
     WHERE id = @id AND org_id = @orgId AND deleted_at IS NULL`,
  );
  const byId = db.prepare<[string], TriggerRow>('SELECT * FROM triggers WHERE id = ? AND deleted_at IS NULL');
  const inOrg = db.prepare<[string, string], TriggerRow>(
    'SELECT * FROM triggers WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
  );
  const byOrg = db.prepare<[string], TriggerRow>(
    'SELECT * FROM triggers WHERE org_id = ? AND deleted_at IS NULL ORDER BY created_at, rowid',
  );
  const byIds = db.prepare<[string, string], TriggerRow>(
    `SELECT * FROM triggers WHERE org_id = ? AND id IN (SELECT value FROM json_each(?)) AND deleted_at IS NULL
     ORDER BY created_at, rowid`,
  );
  const enabledCron = db.prepare<[], TriggerRow>(
    "SELECT * FROM triggers WHERE type = 'cron' AND cron_enabled = 1 AND deleted_at IS NULL",
  );
  const softDelete = db.prepare(
    'UPDATE triggers SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
  );
  const counts = db.prepare<[string, string], TriggerLimits>(
    `SELECT count(*) AS triggers, count(*) FILTER (WHERE type = 'cron' AND cron_enabled = 1) AS enabledCron
     FROM triggers WHERE org_id = ? AND id != ? AND deleted_at IS NULL`,
  );
  const kindOf = db.prepare<[string, string], Pick<TriggerRow, 'type' | 'cron_enabled'>>(
    'SELECT type, cron_enabled FROM triggers WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
  );
  /** Writes `trigger` unless it would pass one of `limits`, counted in the same transaction. */
  const writeWithin = db.transaction(
    (
      trigger: Trigger,
      limits: TriggerLimits | undefined,
      write: () => void,
      inserting: boolean,
    ): TriggerLimit | null => {
      if (limits) {
        const stored = inserting ? undefined : kindOf.get(trigger.orgId, trigger.id);
        const before = stored ? { type: stored.type, cronEnabled: stored.cron_enabled === 1 } : null;
        const others = counts.get(trigger.orgId, trigger.id) as TriggerLimits;
        // An update of a trigger deleted meanwhile writes nothing: nothing to refuse.
        const refused = !inserting && !stored ? null : limitRefusal(before, trigger, others, limits);
        if (refused) return refused;
      }
      write();
      return null;
    },
  );
  const inChannel = db.prepare<[string, string, string, string], TriggerRow>(
    `SELECT * FROM triggers WHERE type = ? AND chat_team_id = ? AND chat_channel_id = ? AND org_id = ?
       AND deleted_at IS NULL AND chat_team_id IS NOT NULL
     ORDER BY chat_keyword, created_at`,
  );
  return {
    async insert(trigger, limits) {
      return writeWithin(trigger, limits, () => insert.run(toParams(trigger)), true);
    },
    async update(trigger, limits) {
      return writeWithin(trigger, limits, () => update.run(toParams(trigger)), false);
    },
    async findById(id) {
      const row = byId.get(id);
      return row ? toTrigger(row) : null;
    },
    async findInOrg(orgId, id) {
      const row = inOrg.get(orgId, id);
      return row ? toTrigger(row) : null;
    },
    async listInChatChannel(orgId, provider, teamId, channelId) {
      return inChannel.all(provider, teamId, channelId, orgId).map(toTrigger);
    },
    async listEnabledCron() {
      return enabledCron.all().map(toTrigger);
    },
    async listByOrg(orgId) {
      return byOrg.all(orgId).map(toTrigger);
    },
    async listByIds(orgId, ids) {
      if (ids.length === 0) return [];
      return byIds.all(orgId, JSON.stringify(ids)).map(toTrigger);
    },
    async softDelete(orgId, id, at) {
      return softDelete.run(at, orgId, id).changes === 1;
    },
  };
}
