import type { Schema } from '@drover/shared/api';
import { CliError } from '../errors.js';
import type { Api } from '../http/api.js';

export type Org = Schema<'Org'>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The organization a session command works in: `wanted` (`--org` / `DROVER_ORG`: an id, or the
 * name of one of the user's organizations), else the user's only one.
 */
export async function resolveOrgId(api: Api, wanted: string | null): Promise<string> {
  if (wanted !== null && UUID.test(wanted)) return wanted.toLowerCase();
  const orgs = await api.get<Org[]>('/orgs');
  if (wanted !== null) {
    const named = orgs.filter((o) => o.name === wanted);
    if (named.length === 1) return named[0]!.id;
    if (named.length > 1)
      throw new CliError(`several of your organizations are named \`${wanted}\`; pass its id to --org`);
    throw new CliError(`you belong to no organization named \`${wanted}\` (${describe(orgs)})`);
  }
  if (orgs.length === 1) return orgs[0]!.id;
  if (orgs.length === 0) throw new CliError('you belong to no organization yet');
  throw new CliError(
    `you belong to ${orgs.length} organizations (${describe(orgs)}); choose one with --org or DROVER_ORG`,
  );
}

function describe(orgs: Org[]): string {
  if (orgs.length === 0) return 'you belong to none';
  return orgs.map((o) => `${o.name}: ${o.id}`).join(', ');
}
