import type { Agent } from '../model/agents.js';
import type { StorageBinding } from '../model/storage-bindings.js';
import type { Trigger } from '../model/triggers.js';
import { describeValue, validationFailed, type ValidationDetail } from '../../errors.js';
import { TOKEN_RUNNABLE_TRIGGER_TYPES } from './grants.js';
import { STORAGE_PERMISSIONS, type Grant, type GrantType, type StoragePermission } from '../model/api-tokens.js';

/**
 * Checks the `scopes` of an API token being issued (docs/management.md, "API tokens and grants"). The route's JSON schema
 * has already checked each field's type; this checks what a schema says badly: each grant's
 * own fields, duplicates, and that every id names something of the issuing organization, so
 * that a token is never wider than its issuer's organization.
 */

export const GRANT_TYPES = ['agent', 'trigger', 'storage'] as const satisfies readonly GrantType[];
export const MAX_GRANT_IDS = 1000;

/** A grant as sent: the type plus any of the fields of every grant type. */
export interface GrantInput {
  type: GrantType;
  agentIds?: string[];
  triggerIds?: string[];
  bindingIds?: string[] | null;
  permissions?: StoragePermission[];
}

const FIELDS: Record<GrantType, readonly (keyof GrantInput)[]> = {
  agent: ['agentIds'],
  trigger: ['triggerIds'],
  storage: ['bindingIds', 'permissions'],
};

const at = (...parts: (string | number)[]) => ['body', 'scopes', ...parts].join('.');

/** The grants in canonical form, or a 422 listing every problem. An empty array is accepted. */
export function parseScopes(scopes: readonly GrantInput[]): Grant[] {
  const problems: ValidationDetail[] = [];
  const seen = new Map<GrantType, number>();
  const grants: Grant[] = [];

  scopes.forEach((input, i) => {
    if (!GRANT_TYPES.includes(input.type)) {
      problems.push({
        path: at(i, 'type'),
        message: `must be one of ${GRANT_TYPES.join(', ')}, got ${describeValue(input.type)}`,
      });
      return;
    }
    const first = seen.get(input.type);
    if (first !== undefined) {
      problems.push({
        path: at(i, 'type'),
        message: `a token holds at most one "${input.type}" grant; merge it with scopes[${first}]`,
      });
      return;
    }
    seen.set(input.type, i);
    for (const [type, fields] of Object.entries(FIELDS)) {
      if (type === input.type) continue;
      for (const field of fields) {
        if (input[field] !== undefined) {
          problems.push({
            path: at(i, field),
            message: `belongs to a "${type}" grant, not to a "${input.type}" grant`,
          });
        }
      }
    }
    const ids = (field: 'agentIds' | 'triggerIds' | 'bindingIds'): string[] | null => {
      const list = input[field];
      if (list === undefined) {
        problems.push({ path: at(i, field), message: `is required in a "${input.type}" grant` });
        return null;
      }
      if (list === null) return null;
      if (list.length === 0) {
        problems.push({
          path: at(i, field),
          message: 'must list at least one id; leave the grant out to grant nothing',
        });
      }
      list.forEach((id, j) => {
        if (list.indexOf(id) !== j) problems.push({ path: at(i, field, j), message: `lists \`${id}\` more than once` });
      });
      return list;
    };
    switch (input.type) {
      case 'agent':
        grants.push({ type: 'agent', agentIds: ids('agentIds') ?? [] });
        break;
      case 'trigger':
        grants.push({ type: 'trigger', triggerIds: ids('triggerIds') ?? [] });
        break;
      case 'storage': {
        if (input.bindingIds === undefined) {
          problems.push({
            path: at(i, 'bindingIds'),
            message: 'is required in a "storage" grant (null: every binding of the organization)',
          });
        }
        const bindingIds = input.bindingIds === undefined ? null : ids('bindingIds');
        const permissions = input.permissions;
        if (permissions === undefined) {
          problems.push({
            path: at(i, 'permissions'),
            message: `is required in a "storage" grant: some of ${STORAGE_PERMISSIONS.join(', ')}`,
          });
        } else if (permissions.length === 0) {
          problems.push({
            path: at(i, 'permissions'),
            message: `must hold at least one of ${STORAGE_PERMISSIONS.join(', ')}`,
          });
        } else {
          permissions.forEach((p, j) => {
            if (permissions.indexOf(p) !== j)
              problems.push({ path: at(i, 'permissions', j), message: `lists ${describeValue(p)} more than once` });
          });
        }
        const canonical = STORAGE_PERMISSIONS.filter((p) => permissions?.includes(p));
        grants.push({ type: 'storage', bindingIds, permissions: canonical });
        break;
      }
    }
  });

  if (problems.length > 0) throw validationFailed(problems);
  return grants;
}

/** Lookups restricted to the issuing organization. */
export interface OrgTargets {
  agents(ids: readonly string[]): Promise<Agent[]>;
  triggers(ids: readonly string[]): Promise<Trigger[]>;
  bindings(): Promise<StorageBinding[]>;
}

/**
 * Every agent, trigger and binding a grant names must belong to the organization (revoked
 * agents and deleted triggers or bindings do not count), and every trigger must be one a token
 * can run (a webhook trigger): otherwise a 422 naming each id.
 */
export async function checkGrantTargets(grants: readonly Grant[], targets: OrgTargets): Promise<void> {
  const problems: ValidationDetail[] = [];
  const report = (i: number, field: string, list: readonly string[], known: Set<string>, what: string) => {
    list.forEach((id, j) => {
      if (!known.has(id))
        problems.push({ path: at(i, field, j), message: `\`${id}\` is not ${what} of this organization` });
    });
  };
  for (const [i, grant] of grants.entries()) {
    if (grant.type === 'agent') {
      const found = await targets.agents(grant.agentIds);
      report(
        i,
        'agentIds',
        grant.agentIds,
        new Set(found.filter((a) => a.status !== 'revoked').map((a) => a.id)),
        'an active agent',
      );
    } else if (grant.type === 'trigger') {
      const found = await targets.triggers(grant.triggerIds);
      report(i, 'triggerIds', grant.triggerIds, new Set(found.map((t) => t.id)), 'a trigger');
      grant.triggerIds.forEach((id, j) => {
        const trigger = found.find((t) => t.id === id);
        if (trigger && !TOKEN_RUNNABLE_TRIGGER_TYPES.includes(trigger.type)) {
          problems.push({
            path: at(i, 'triggerIds', j),
            message: `\`${id}\` is the ${trigger.type} trigger \`${trigger.name}\`; an API token runs only ${TOKEN_RUNNABLE_TRIGGER_TYPES.join(' and ')} triggers`,
          });
        }
      });
    } else if (grant.bindingIds !== null) {
      const found = await targets.bindings();
      report(i, 'bindingIds', grant.bindingIds, new Set(found.map((b) => b.id)), 'a storage binding');
    }
  }
  if (problems.length > 0) throw validationFailed(problems);
}
