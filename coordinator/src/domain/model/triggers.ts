export const CHAT_PROVIDERS = ['slack', 'discord'] as const;
export type ChatProvider = (typeof CHAT_PROVIDERS)[number];
export const TRIGGER_TYPES = ['webhook', 'cron', ...CHAT_PROVIDERS] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];
export const NOTIFY_ON = ['always', 'failure', 'success', 'none'] as const;
export type NotifyOn = (typeof NOTIFY_ON)[number];

export interface Trigger {
  id: string;
  orgId: string;
  name: string;
  type: TriggerType;
  agentId: string;
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
  chatTeamId: string | null;
  chatChannelId: string | null;
  chatKeyword: string | null;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface TriggerRepository {
  insert(trigger: Trigger): Promise<void>;
  /** Replaces every configuration field of an existing trigger. */
  update(trigger: Trigger): Promise<void>;
  findById(id: string): Promise<Trigger | null>;
  findInOrg(orgId: string, id: string): Promise<Trigger | null>;
  /** Oldest first. */
  listByOrg(orgId: string): Promise<Trigger[]>;
  listByIds(orgId: string, ids: readonly string[]): Promise<Trigger[]>;
  /** Deleted triggers are never found again; their jobs keep pointing at the id. */
  softDelete(orgId: string, id: string, at: string): Promise<boolean>;
}
