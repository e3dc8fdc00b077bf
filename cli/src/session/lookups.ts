import type { Schema } from '@drover/shared/api';
import { characterCount } from '@drover/shared';
import { ApiError, CliError } from '../errors.js';
import type { SessionCaller } from '../callers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string) => UUID.test(value);

/**
 * The id given to a flag that takes only ids (`--batch`, `--trigger`), checked before any request:
 * an error naming the flag when it is no UUID; undefined when the flag was not given.
 */
export function idFlag(flag: string, what: string, value: string | undefined): string | undefined {
  if (value !== undefined && !isUuid(value)) {
    throw new CliError(`${flag}: expected a ${what} id (a UUID), got \`${value}\``);
  }
  return value;
}

/**
 * The one item of `items` that `value` names, by id or by `nameOf`; an error naming `what` when
 * none or several do. An id is taken as it is when `items` is not needed to know it.
 */
export function pick<T extends { id: string }>(
  items: readonly T[],
  value: string,
  what: string,
  nameOf: (item: T) => string,
): T {
  const byId = items.find((item) => item.id.toLowerCase() === value.toLowerCase());
  if (byId) return byId;
  const named = items.filter((item) => nameOf(item) === value);
  if (named.length === 1) return named[0]!;
  if (named.length > 1) throw new CliError(`${named.length} ${what}s are named \`${value}\`: give the id`);
  throw new CliError(`no ${what} \`${value}\` in the organization`);
}

/** The longest name a trigger may have (the coordinator's), in characters (code points: an emoji is one). */
export const MAX_TRIGGER_NAME_LENGTH = 255;

/** A trigger of the organization, by id (`GET .../triggers/:id`) or by name. */
export async function findTrigger(caller: SessionCaller, value: string): Promise<Schema<'Trigger'>> {
  const path = `/orgs/${await caller.orgId()}/triggers`;
  if (isUuid(value)) return caller.api.get<Schema<'Trigger'>>(`${path}/${value}`);
  // Only those whose name holds it (a name is at most MAX_TRIGGER_NAME_LENGTH long), not every trigger.
  const named =
    value === '' || characterCount(value) > MAX_TRIGGER_NAME_LENGTH
      ? []
      : await caller.api.get<Schema<'Trigger'>[]>(path, { q: value });
  return pick(named, value, 'trigger', (t) => t.name);
}

/** An agent of the organization, by id or name (revoked agents left out of names). */
export async function agentId(caller: SessionCaller, value: string): Promise<string> {
  if (isUuid(value)) return value;
  return (await agentByName(caller, value)).id;
}

/** An agent of the organization as the API shows it, by id (`GET .../agents/:id`) or name. */
export async function findAgent(caller: SessionCaller, value: string): Promise<Schema<'Agent'>> {
  if (!isUuid(value)) return agentByName(caller, value);
  return caller.api.get<Schema<'Agent'>>(`/orgs/${await caller.orgId()}/agents/${value}`);
}

/**
 * The agent of that name: among those whose name or hostname holds it (`q`), which the coordinator
 * selects, not a fleet's thousands read to find one; a coordinator older than `q` refuses it (422),
 * and its every agent is read instead.
 */
async function agentByName(caller: SessionCaller, value: string): Promise<Schema<'Agent'>> {
  const path = `/orgs/${await caller.orgId()}/agents`;
  const agents = await caller.api
    .get<Schema<'Agent'>[]>(path, { q: value })
    .catch((error: unknown) =>
      error instanceof ApiError && error.status === 422
        ? caller.api.get<Schema<'Agent'>[]>(path)
        : Promise.reject(error),
    );
  const live = agents.filter((a) => a.status !== 'revoked');
  const revoked = agents.filter((a) => a.status === 'revoked' && a.name === value);
  if (revoked.length > 0 && !live.some((a) => a.name === value)) {
    // Only revoked agents bear the name: say so, rather than that the organization has none.
    const ids = revoked.map((a) => a.id);
    throw new CliError(
      `no agent \`${value}\` in the organization but ${ids.length === 1 ? 'a revoked one' : `${ids.length} revoked ones`} ` +
        `(${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''}): a revoked agent is named by its id`,
    );
  }
  return pick(live, value, 'agent', (a) => a.name);
}

/** A storage binding of the organization, by id or name. */
export async function bindingId(caller: SessionCaller, value: string): Promise<string> {
  if (isUuid(value)) return value;
  const bindings = await caller.api.get<Schema<'StorageBinding'>[]>(`/orgs/${await caller.orgId()}/storage-bindings`);
  return pick(bindings, value, 'storage binding', (b) => b.name).id;
}

/** What an application's slug may be (the coordinator's rule, docs/ota.md "Applications"). */
export const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * An application of the organization, by id or slug; none is an error saying how to create one
 * (the releases, rollouts and devices of an application need it first).
 */
export async function findApp(caller: SessionCaller, value: string): Promise<Schema<'Application'>> {
  const apps = await caller.api.get<Schema<'Application'>[]>(`/orgs/${await caller.orgId()}/apps`);
  if (!apps.some((a) => a.id.toLowerCase() === value.toLowerCase() || a.slug === value)) {
    const slug = SLUG.test(value) ? value : '<slug>';
    throw new CliError(
      `no application \`${value}\` in the organization: create it with ` +
        `\`drover app create ${slug} --workflow <update-workflow>\` or on the dashboard's Updates page ` +
        `(\`drover app list\` lists the organization's applications)`,
    );
  }
  return pick(apps, value, 'application', (a) => a.slug);
}
