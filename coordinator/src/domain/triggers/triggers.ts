import type { Agent } from '../model/agents.js';
import type {
  ChatProvider,
  CronMissedPolicy,
  CronOverlapPolicy,
  Fanout,
  NotifyOn,
  Trigger,
  TriggerType,
} from '../model/triggers.js';
import { conflict, describeValue, validationFailed, type ValidationDetail } from '../../errors.js';
import { hiddenCharacterProblem, nameProblem } from '../names.js';
import { chatKeywordProblem } from '../chat/arguments.js';
import { envValueProblems, plainJsonProblems } from '../plain-json.js';
import { canonicalTimeZone, checkCronExpression, DEFAULT_CRON_TIMEZONE } from '../cron/triggers-cron.js';
import { parseSelector, SelectorError, storableSelector } from '@drover/shared';
import { NO_REQUIREMENT } from '../agents/agent-labels.js';

/**
 * Trigger configuration rules beyond single-field types (those are the route's JSON schema):
 * which fields each scope, notification setting and kind needs or refuses, defaults, cron and
 * time-zone checks. Pure functions; the route supplies the stored trigger and the agent.
 */

export const RESPONSE_TIMEOUT_MS = { min: 1_000, max: 600_000, default: 30_000 } as const;
export const MAX_ALLOWED_REFS = 100;
export const MAX_REF_LENGTH = 255;

/** Why a ref cannot be a run's (`DROVER_REF` in each step's environment, shown in logs and chat), or null. */
export function refProblem(ref: string): string | null {
  return hiddenCharacterProblem(ref);
}
export const MAX_CHAT_KEYWORD_LENGTH = 64;
/** At most this many people listed in a chat trigger's `chatAllowedUserIds`. */
export const MAX_CHAT_ALLOWED_USERS = 200;
/** A provider's user id: Slack's `U0123ABCD` / `W…`, Discord's numeric snowflake. */
export const CHAT_USER_ID_PATTERN = '^[A-Za-z0-9]{1,64}$';
/** Same rule as a workflow definition's `name`. */
export { WORKFLOW_NAME_PATTERN } from '@drover/shared';
export const MAX_WORKFLOW_NAME_LENGTH = 128;

export const CONFIG_FIELDS = [
  'name',
  'type',
  'agentId',
  'agentSelector',
  'fanout',
  'maxParallel',
  'scopeType',
  'workflowName',
  'responseMode',
  'responseTimeoutMs',
  'allowedRefs',
  'allowDebug',
  'notifyProvider',
  'notifyTeamId',
  'notifyChannelId',
  'notifyOn',
  'cronExpression',
  'cronTimezone',
  'cronEnabled',
  'cronMissedPolicy',
  'cronOverlapPolicy',
  'params',
  'ref',
  'chatTeamId',
  'chatChannelId',
  'chatKeyword',
  'chatAllowedUserIds',
] as const satisfies readonly (keyof Trigger)[];

/** Everything about a trigger that its owner configures. */
export type TriggerConfig = Pick<Trigger, (typeof CONFIG_FIELDS)[number]>;

/**
 * A create or update request: any subset of the configuration. `null` on an optional field
 * means "none" (or its default); an absent field keeps the stored value on update.
 */
export interface TriggerInput {
  name?: string;
  type?: TriggerType;
  agentId?: string | null;
  agentSelector?: string | null;
  fanout?: Fanout | null;
  maxParallel?: number | null;
  scopeType?: 'workflow' | 'agent';
  workflowName?: string | null;
  responseMode?: 'async' | 'sync';
  responseTimeoutMs?: number;
  allowedRefs?: string[] | null;
  allowDebug?: boolean;
  notifyProvider?: ChatProvider | null;
  notifyTeamId?: string | null;
  notifyChannelId?: string | null;
  notifyOn?: NotifyOn;
  cronExpression?: string | null;
  cronTimezone?: string | null;
  cronEnabled?: boolean | null;
  cronMissedPolicy?: CronMissedPolicy | null;
  cronOverlapPolicy?: CronOverlapPolicy | null;
  params?: Record<string, unknown> | null;
  ref?: string | null;
  chatTeamId?: string | null;
  chatChannelId?: string | null;
  chatKeyword?: string | null;
  chatAllowedUserIds?: string[] | null;
}

const CRON_FIELDS = [
  'cronExpression',
  'cronTimezone',
  'cronEnabled',
  'cronMissedPolicy',
  'cronOverlapPolicy',
  'params',
  'ref',
] as const;
/** What a cron trigger does with missed occurrences and overlaps unless told (docs/schedules.md). */
export const DEFAULT_CRON_MISSED_POLICY: CronMissedPolicy = 'skip';
export const DEFAULT_CRON_OVERLAP_POLICY: CronOverlapPolicy = 'skip';
const CHAT_FIELDS = ['chatTeamId', 'chatChannelId', 'chatKeyword', 'chatAllowedUserIds'] as const;
const REQUIRED_ON_CREATE = ['name', 'scopeType'] as const;

const at = (field: string) => `body.${field}`;

/**
 * The whole configuration after applying `input` to `current` (null when creating), or a 422
 * listing every problem. Fields that the request sends but the result cannot use (a
 * `workflowName` with `scopeType: agent`, cron fields on a webhook, ...) are refused, never
 * stored silently; stored values that a change of scope, provider or kind makes meaningless
 * are cleared.
 */
export function resolveTriggerConfig(input: TriggerInput, current: TriggerConfig | null): TriggerConfig {
  const problems: ValidationDetail[] = [];
  const sent = (field: keyof TriggerInput) => input[field] !== undefined;
  const pick = <K extends keyof TriggerInput & keyof TriggerConfig>(field: K): TriggerConfig[K] | null | undefined =>
    sent(field) ? (input[field] as TriggerConfig[K] | null) : current?.[field];

  if (!current) {
    for (const field of REQUIRED_ON_CREATE)
      if (!sent(field)) problems.push({ path: at(field), message: 'is required' });
  }
  const type = pick('type') ?? 'webhook';
  const scopeType = pick('scopeType') ?? 'workflow';
  const refuseUnless = (fields: readonly (keyof TriggerInput)[], why: string) => {
    for (const field of fields) {
      if (input[field] !== undefined && input[field] !== null) {
        problems.push({ path: at(field), message: `${why}; omit it or send null, got ${describeValue(input[field])}` });
      }
    }
  };
  const need = <T>(field: keyof TriggerInput, value: T | null | undefined, why: string): T | null => {
    if (value === null || value === undefined) {
      problems.push({ path: at(field), message: `is required ${why}` });
      return null;
    }
    return value;
  };

  // A cron trigger's runs answer no caller and are never debug runs: it has no answer settings
  // (stored as an async trigger without debug, which is how a run by hand of it answers).
  let responseMode = pick('responseMode');
  let responseTimeoutMs = pick('responseTimeoutMs') ?? RESPONSE_TIMEOUT_MS.default;
  let allowDebug = pick('allowDebug') ?? false;
  if (type === 'cron') {
    if (input.responseMode === 'sync') {
      problems.push({
        path: at('responseMode'),
        message: `is used only by webhook and chat triggers: a cron trigger answers no caller; omit it, got ${describeValue(input.responseMode)}`,
      });
    }
    if (input.responseTimeoutMs !== undefined) {
      problems.push({
        path: at('responseTimeoutMs'),
        message: `is used only by sync triggers: a cron trigger answers no caller; omit it, got ${describeValue(input.responseTimeoutMs)}`,
      });
    }
    if (input.allowDebug === true) {
      problems.push({
        path: at('allowDebug'),
        message: `is used only by webhook and chat triggers: a scheduled run is never a debug run; omit it, got ${describeValue(input.allowDebug)}`,
      });
    }
    responseMode = 'async';
    responseTimeoutMs = RESPONSE_TIMEOUT_MS.default;
    allowDebug = false;
  } else if (responseMode === undefined || responseMode === null) {
    problems.push({ path: at('responseMode'), message: `is required for a ${type} trigger` });
  }

  if (input.name !== undefined) {
    const problem = nameProblem(input.name);
    if (problem) problems.push({ path: at('name'), message: problem });
  }

  const target = resolveTarget(input, current, scopeType, problems);

  let workflowName: string | null = null;
  if (scopeType === 'workflow') {
    workflowName = need('workflowName', pick('workflowName'), 'when scopeType is "workflow"');
  } else {
    refuseUnless(['workflowName'], 'is used only when scopeType is "workflow"');
  }

  const notifyProvider = pick('notifyProvider') ?? null;
  let notifyTeamId: string | null = null;
  let notifyChannelId: string | null = null;
  let notifyOn: NotifyOn = 'none';
  if (notifyProvider) {
    notifyTeamId = need('notifyTeamId', pick('notifyTeamId'), 'when notifyProvider is set');
    notifyChannelId = need('notifyChannelId', pick('notifyChannelId'), 'when notifyProvider is set');
    // A newly chosen channel is told about every outcome unless the request says otherwise.
    notifyOn = input.notifyOn ?? (current?.notifyProvider ? current.notifyOn : 'always');
  } else {
    refuseUnless(['notifyTeamId', 'notifyChannelId'], 'is used only when notifyProvider is set');
    if (input.notifyOn !== undefined && input.notifyOn !== 'none') {
      problems.push({
        path: at('notifyOn'),
        message: `needs a notifyProvider; without one only "none" is accepted, got ${describeValue(input.notifyOn)}`,
      });
    }
  }

  let cronExpression: string | null = null;
  let cronTimezone: string | null = null;
  let cronEnabled: boolean | null = null;
  let cronMissedPolicy: CronMissedPolicy | null = null;
  let cronOverlapPolicy: CronOverlapPolicy | null = null;
  let params: Record<string, unknown> | null = null;
  let ref: string | null = null;
  let chatTeamId: string | null = null;
  let chatChannelId: string | null = null;
  let chatKeyword: string | null = null;
  let chatAllowedUserIds: string[] | null = null;
  if (type === 'cron') {
    refuseUnless(CHAT_FIELDS, 'is used only by slack and discord triggers');
    const expression = need('cronExpression', pick('cronExpression'), 'when type is "cron"');
    if (expression !== null) {
      const check = checkCronExpression(expression);
      if (check.ok) cronExpression = check.expression;
      else problems.push({ path: at('cronExpression'), message: check.reason });
    }
    const zone = pick('cronTimezone') ?? DEFAULT_CRON_TIMEZONE;
    cronTimezone = canonicalTimeZone(zone);
    if (cronTimezone === null) {
      problems.push({
        path: at('cronTimezone'),
        message: `must be an IANA time zone name such as "Europe/Paris" or "UTC", got ${describeValue(zone)}`,
      });
    }
    cronEnabled = pick('cronEnabled') ?? true;
    cronMissedPolicy = pick('cronMissedPolicy') ?? DEFAULT_CRON_MISSED_POLICY;
    cronOverlapPolicy = pick('cronOverlapPolicy') ?? DEFAULT_CRON_OVERLAP_POLICY;
    if (scopeType !== 'workflow') {
      problems.push({
        path: at('scopeType'),
        message: 'must be "workflow" for a cron trigger: a schedule runs one workflow, named by workflowName',
      });
    }
    params = pick('params') ?? null;
    if (params !== null) {
      for (const problem of [...plainJsonProblems(params, 'params'), ...envValueProblems(params, 'params')]) {
        problems.push({ ...problem, path: at(problem.path) });
      }
    }
    ref = pick('ref') ?? null;
    const refRefused = ref === null ? null : refProblem(ref);
    if (refRefused) problems.push({ path: at('ref'), message: refRefused });
    const allowedRefs = pick('allowedRefs') ?? null;
    if (allowedRefs !== null) {
      if (ref === null) {
        problems.push({ path: at('ref'), message: 'is required: this trigger accepts only the refs in allowedRefs' });
      } else if (!allowedRefs.includes(ref)) {
        problems.push({ path: at('ref'), message: `must be one of allowedRefs, got ${describeValue(ref)}` });
      }
    }
  } else if (type === 'slack' || type === 'discord') {
    refuseUnless(CRON_FIELDS, 'is used only by cron triggers');
    chatTeamId = need('chatTeamId', pick('chatTeamId'), `when type is "${type}"`);
    chatChannelId = need('chatChannelId', pick('chatChannelId'), `when type is "${type}"`);
    chatKeyword = need('chatKeyword', pick('chatKeyword'), `when type is "${type}"`);
    // Checked when set: a stored keyword stays as it is when other fields change.
    const keywordRefused = typeof input.chatKeyword === 'string' ? chatKeywordProblem(input.chatKeyword) : null;
    if (keywordRefused) {
      problems.push({ path: at('chatKeyword'), message: `${keywordRefused}, got ${describeValue(input.chatKeyword)}` });
    }
    chatAllowedUserIds = pick('chatAllowedUserIds') ?? null;
  } else {
    refuseUnless(CRON_FIELDS, 'is used only by cron triggers');
    refuseUnless(CHAT_FIELDS, 'is used only by slack and discord triggers');
  }
  (pick('allowedRefs') ?? []).forEach((allowed, i) => {
    const refused = refProblem(allowed);
    if (refused) problems.push({ path: at(`allowedRefs.${i}`), message: refused });
  });

  if (problems.length > 0) throw validationFailed(problems);
  return {
    name: (pick('name') as string).trim(),
    type,
    ...target,
    scopeType,
    workflowName,
    responseMode: responseMode as 'async' | 'sync',
    responseTimeoutMs,
    allowedRefs: pick('allowedRefs') ?? null,
    allowDebug,
    notifyProvider,
    notifyTeamId,
    notifyChannelId,
    notifyOn,
    cronExpression,
    cronTimezone,
    cronEnabled,
    cronMissedPolicy,
    cronOverlapPolicy,
    params,
    ref,
    chatTeamId,
    chatChannelId,
    chatKeyword,
    chatAllowedUserIds,
  };
}

/**
 * Where a trigger runs: on one agent (`agentId`) or on the agents a label selector picks
 * (`agentSelector`, with `fanout` and, for `all`, `maxParallel`), never both (docs/fleets.md).
 * On update, naming one of the two replaces the other.
 */
function resolveTarget(
  input: TriggerInput,
  current: TriggerConfig | null,
  scopeType: 'workflow' | 'agent',
  problems: ValidationDetail[],
): Pick<TriggerConfig, 'agentId' | 'agentSelector' | 'fanout' | 'maxParallel'> {
  const none = { agentId: null, agentSelector: null, fanout: null, maxParallel: null };
  const sentAgent = input.agentId !== undefined && input.agentId !== null;
  const sentSelector = input.agentSelector !== undefined && input.agentSelector !== null;
  if (sentAgent && sentSelector) {
    problems.push({
      path: at('agentSelector'),
      message: 'a trigger runs on agentId or on the agents agentSelector selects, not both; send one of them',
    });
    return none;
  }
  const onSelector = sentSelector || (!sentAgent && input.agentSelector !== null && current?.agentSelector != null);
  if (!onSelector) {
    const agentId = sentAgent ? (input.agentId as string) : input.agentId === null ? null : (current?.agentId ?? null);
    if (agentId === null)
      problems.push({ path: at('agentId'), message: 'is required: or name agents with agentSelector' });
    for (const field of ['fanout', 'maxParallel'] as const) {
      if (input[field] !== undefined && input[field] !== null) {
        problems.push({
          path: at(field),
          message: `is used only with agentSelector; omit it or send null, got ${describeValue(input[field])}`,
        });
      }
    }
    return { ...none, agentId };
  }
  let agentSelector: string | null = null;
  const source = sentSelector ? (input.agentSelector as string) : (current?.agentSelector as string);
  try {
    const requirements = parseSelector(source);
    if (requirements.length === 0) {
      problems.push({ path: at('agentSelector'), message: NO_REQUIREMENT });
    } else {
      agentSelector = storableSelector(requirements);
    }
  } catch (error) {
    if (!(error instanceof SelectorError)) throw error;
    problems.push({ path: at('agentSelector'), message: `is not a label selector: ${error.message}` });
  }
  if (scopeType !== 'workflow') {
    problems.push({
      path: at('scopeType'),
      message: 'must be "workflow" for a trigger on agentSelector: its agents run the workflow named by workflowName',
    });
  }
  const fanout = input.fanout === undefined ? (current?.fanout ?? null) : input.fanout;
  if (fanout === null) {
    problems.push({ path: at('fanout'), message: 'is required with agentSelector: "one" (a pool) or "all" (a batch)' });
  }
  const maxParallel = input.maxParallel === undefined ? (current?.maxParallel ?? null) : input.maxParallel;
  if (fanout === 'one' && maxParallel !== null) {
    if (input.maxParallel !== undefined) {
      problems.push({
        path: at('maxParallel'),
        message: `is used only with fanout "all" (a pool runs each call's one job); omit it or send null, got ${describeValue(maxParallel)}`,
      });
    }
    return { agentId: null, agentSelector, fanout, maxParallel: null };
  }
  return { agentId: null, agentSelector, fanout, maxParallel };
}

/** A trigger runs on one agent of its organization, which must not be revoked. */
export function checkTriggerAgent(agentId: string, agent: Agent | null): void {
  if (!agent)
    throw validationFailed([{ path: at('agentId'), message: `\`${agentId}\` is not an agent of this organization` }]);
  if (agent.status === 'revoked') {
    throw validationFailed([
      { path: at('agentId'), message: `agent \`${agentId}\` is revoked; choose an active agent` },
    ]);
  }
}

/**
 * Two chat triggers listening for the same keyword in the same channel would both claim every
 * message: refused with 409. Keywords compare case-insensitively.
 */
export function checkChatKeywordClash(config: TriggerConfig, others: readonly Trigger[], selfId: string | null): void {
  if (config.chatKeyword === null) return;
  const keyword = config.chatKeyword.toLowerCase();
  const clash = others.find(
    (t) =>
      t.id !== selfId &&
      t.type === config.type &&
      t.chatTeamId === config.chatTeamId &&
      t.chatChannelId === config.chatChannelId &&
      t.chatKeyword?.toLowerCase() === keyword,
  );
  if (clash) {
    throw conflict(
      `Trigger \`${clash.name}\` (${clash.id}) already answers the keyword \`${config.chatKeyword}\` in this channel`,
    );
  }
}

/** The configuration fields whose value differs between two versions (for the audit log). */
export function changedFields(before: TriggerConfig, after: TriggerConfig): string[] {
  return CONFIG_FIELDS.filter((f) => JSON.stringify(before[f]) !== JSON.stringify(after[f]));
}
