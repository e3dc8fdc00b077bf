import type { DamagedRow } from '../../util/json.js';

export const CHAT_PROVIDERS = ['slack', 'discord'] as const;
export type ChatProvider = (typeof CHAT_PROVIDERS)[number];
export const TRIGGER_TYPES = ['webhook', 'cron', ...CHAT_PROVIDERS] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];
export const NOTIFY_ON = ['always', 'failure', 'success', 'none'] as const;
export type NotifyOn = (typeof NOTIFY_ON)[number];
/** What a cron trigger does with occurrences that passed while it could not fire (docs/schedules.md). */
export const CRON_MISSED_POLICIES = ['skip', 'run_once'] as const;
export type CronMissedPolicy = (typeof CRON_MISSED_POLICIES)[number];
/** What a cron trigger does at an occurrence while its previous scheduled job is still open. */
export const CRON_OVERLAP_POLICIES = ['skip', 'queue'] as const;
export type CronOverlapPolicy = (typeof CRON_OVERLAP_POLICIES)[number];

export const FANOUTS = ['one', 'all'] as const;
export type Fanout = (typeof FANOUTS)[number];

export interface Trigger {
  id: string;
  orgId: string;
  name: string;
  type: TriggerType;
  /** The agent it runs on; null for a trigger on a label selector. */
  agentId: string | null;
  /** The label selector of the agents it runs on (docs/fleets.md), canonical; null: it runs on `agentId`. */
  agentSelector: string | null;
  /** A selector trigger: on one agent of the pool (`one`) or on every agent selected, as a batch (`all`). */
  fanout: Fanout | null;
  /** `fanout: all`: at most this many of a batch's jobs handed out at a time; null: all at once. */
  maxParallel: number | null;
  scopeType: 'workflow' | 'agent';
  workflowName: string | null;
  responseMode: 'async' | 'sync';
  responseTimeoutMs: number;
  allowedRefs: string[] | null;
  allowDebug: boolean;
  notifyProvider: ChatProvider | null;
  notifyTeamId: string | null;
  notifyChannelId: string | null;
  notifyOn: NotifyOn;
  cronExpression: string | null;
  cronTimezone: string | null;
  cronEnabled: boolean | null;
  cronMissedPolicy: CronMissedPolicy | null;
  cronOverlapPolicy: CronOverlapPolicy | null;
  /** The fixed params of each scheduled run (cron triggers), or null. */
  params: Record<string, unknown> | null;
  /** The ref of each scheduled run (cron triggers), or null. */
  ref: string | null;
  /**
   * Cron triggers: the instant the current schedule (expression and zone) took effect; its
   * occurrences before it are not owed. Null for other kinds.
   */
  cronSince: string | null;
  chatTeamId: string | null;
  chatChannelId: string | null;
  chatKeyword: string | null;
  /**
   * Chat triggers: the provider's ids of the people who may run it (Slack `U…`, Discord's numeric
   * ids); null: anyone who can write in the channel.
   */
  chatAllowedUserIds: string[] | null;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * The most triggers an organization may have (settings of the server, docs/management.md,
 * "Limits"), and how many it has: triggers not deleted, of every kind, and enabled cron triggers.
 */
export interface TriggerLimits {
  triggers: number;
  enabledCron: number;
}
export type TriggerLimit = keyof TriggerLimits;

/** What a trigger's write did: nothing refused (null), a limit it would pass, or the trigger changed meanwhile. */
export type TriggerWrite = TriggerLimit | 'changed' | null;

/**
 * Which limit writing `after` (over `before`; null: inserting it) would pass, given how many
 * triggers the organization has besides this one (domain/triggers/trigger-limits.ts); run inside the write.
 */
export type TriggerLimitRefusal = (
  before: Pick<Trigger, 'type' | 'cronEnabled'> | null,
  after: Pick<Trigger, 'type' | 'cronEnabled'>,
  others: TriggerLimits,
  limits: TriggerLimits,
) => TriggerLimit | null;

/** A trigger as a list reads it: with its insertion key, which orders triggers created in one instant (a page's cursor). */
export type ListedTrigger = Trigger & { listKey: number };

export interface TriggerRepository {
  /**
   * Inserts the trigger, unless it would pass one of `limits` (counted in the same transaction,
   * so that two writes cannot both take the last place): then the limit, and nothing is written.
   */
  insert(trigger: Trigger, limits?: TriggerLimits): Promise<TriggerLimit | null>;
  /**
   * Replaces every configuration field of an existing trigger; `limits` as for `insert`. With
   * `since`, the `updatedAt` of the trigger the change was made from: a trigger changed or deleted
   * since is not written, and the answer is `changed`.
   */
  update(trigger: Trigger, limits?: TriggerLimits, since?: string): Promise<TriggerWrite>;
  findById(id: string): Promise<Trigger | null>;
  findInOrg(orgId: string, id: string): Promise<Trigger | null>;
  /** The organization's chat triggers of `provider` listening in the channel, by keyword. */
  listInChatChannel(orgId: string, provider: ChatProvider, teamId: string, channelId: string): Promise<Trigger[]>;
  /**
   * Every cron trigger that is enabled, of every organization; one whose row does not parse (only
   * a damaged or hand-edited database holds one) is left out and reported in `damaged`.
   */
  listEnabledCron(): Promise<{ triggers: Trigger[]; damaged: DamagedRow[] }>;
  /** Oldest first. */
  listByOrg(orgId: string): Promise<ListedTrigger[]>;
  listByIds(orgId: string, ids: readonly string[]): Promise<ListedTrigger[]>;
  /** Deleted triggers are never found again; their jobs keep pointing at the id. */
  softDelete(orgId: string, id: string, at: string): Promise<boolean>;
}
