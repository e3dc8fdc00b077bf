import type { TriggerType } from '../model/triggers.js';

/** The grants a token's `scopes` array holds (docs/management.md, "API tokens and grants"). Each `type` appears at most once. */

/**
 * The kinds of trigger an API token runs (`POST /v1/triggers/:id/run`): webhook triggers only.
 * Cron triggers run on their schedule and chat triggers from their channel (docs/trigger-runs.md).
 */
export const TOKEN_RUNNABLE_TRIGGER_TYPES: readonly TriggerType[] = ['webhook'];

export const STORAGE_PERMISSIONS = ['read', 'write', 'delete'] as const;
export type StoragePermission = (typeof STORAGE_PERMISSIONS)[number];

export interface AgentGrant {
  type: 'agent';
  agentIds: string[];
}
export interface TriggerGrant {
  type: 'trigger';
  triggerIds: string[];
}
export interface StorageGrant {
  type: 'storage';
  /** null: every binding of the organization. */
  bindingIds: string[] | null;
  permissions: StoragePermission[];
}
export type Grant = AgentGrant | TriggerGrant | StorageGrant;
export type GrantType = Grant['type'];

export function findGrant<T extends GrantType>(
  scopes: readonly Grant[],
  type: T,
): Extract<Grant, { type: T }> | undefined {
  return scopes.find((g): g is Extract<Grant, { type: T }> => g.type === type);
}
