import type { Grant, GrantType } from '../model/api-tokens.js';
import type { TriggerType } from '../model/triggers.js';

/**
 * The kinds of trigger an API token runs (`POST /v1/triggers/:id/run`): webhook triggers only.
 * Cron triggers run on their schedule and chat triggers from their channel (docs/trigger-runs.md).
 */
export const TOKEN_RUNNABLE_TRIGGER_TYPES: readonly TriggerType[] = ['webhook'];

export function findGrant<T extends GrantType>(
  scopes: readonly Grant[],
  type: T,
): Extract<Grant, { type: T }> | undefined {
  return scopes.find((g): g is Extract<Grant, { type: T }> => g.type === type);
}
