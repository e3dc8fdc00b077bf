import { ApiError } from '../api/client';
import type { ApiToken, Grant, GrantView } from '../api/access';
import { shortId } from '@drover/shared/short-id';

/** How the API tokens page says a token's grants, limits and state. */

/** Names of the things grants point at, by id (agents, triggers, storage bindings). */
export type Names = Map<string, string>;

const listOf = (ids: string[], names: Names): string => ids.map((id) => names.get(id) ?? shortId(id)).join(', ');

/** `run triggers: deploy, nightly` · `agents: build-01` · `storage (every binding): read, write` */
export function grantWords(grant: GrantView, names: Names): string {
  switch (grant.type) {
    case 'agent':
      return `agents: ${listOf(grant.agentIds, names)}`;
    case 'trigger':
      return `run triggers: ${listOf(grant.triggerIds, names)}`;
    case 'storage': {
      const where = grant.bindingIds ? listOf(grant.bindingIds, names) : 'every binding';
      return `storage (${where}): ${grant.permissions.join(', ') || 'no permission'}`;
    }
  }
}

/** `60 a minute, 5000 a day`, or `no limit`. */
export function limitWords(limit: ApiToken['rateLimit']): string {
  const parts: string[] = [];
  if (limit.perMinute !== null) parts.push(`${limit.perMinute} a minute`);
  if (limit.perHour !== null) parts.push(`${limit.perHour} an hour`);
  if (limit.perDay !== null) parts.push(`${limit.perDay} a day`);
  return parts.length > 0 ? parts.join(', ') : 'no limit';
}

export type TokenState = 'active' | 'expired' | 'revoked';

export function tokenState(token: ApiToken, now = Date.now()): TokenState {
  if (token.revokedAt) return 'revoked';
  if (token.expiresAt && new Date(token.expiresAt).getTime() <= now) return 'expired';
  return 'active';
}

/** The field of the issue form a grant's type is chosen with. */
const TYPE_FIELD: Record<Grant['type'], string> = { agent: 'agentIds', trigger: 'triggerIds', storage: 'bindingIds' };

/**
 * A 422 about `body.scopes.<i>.<field>...` rewritten for the form, which has one group of inputs
 * per grant type: the detail goes to `body.<field>` (the group), and an id the API names is
 * replaced by the name the form shows. Other errors are returned as they are.
 */
export function grantErrors(error: unknown, sent: readonly Grant[] | undefined, names: Names): unknown {
  if (!(error instanceof ApiError) || error.details.length === 0 || !sent) return error;
  const named = (message: string) => message.replace(/`([0-9a-f-]{36})`/g, (all, id: string) => names.get(id) ?? all);
  const details = error.details.map((d) => {
    const match = /^body\.scopes\.(\d+)\.([A-Za-z]+)/.exec(d.path);
    const grant = match ? sent[Number(match[1])] : undefined;
    if (!match || !grant) return d;
    const field = match[2] === 'type' ? TYPE_FIELD[grant.type] : match[2];
    return { path: `body.${field}`, message: named(d.message) };
  });
  return new ApiError(error.statusCode, error.code, named(error.message), details, error.retryAfter);
}
