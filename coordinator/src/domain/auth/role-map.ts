import type { Logger } from 'pino';
import type { Org, OrgRepository } from '../model/orgs.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The organization an entry of the single sign-on role map names: by its id, or by its name when
 * exactly one organization has it. Names are not unique, and any signed-in user may create an
 * organization of any name: a name two organizations share maps to neither (an impostor's copy
 * must not receive the group's members, docs/sso.md), and the coordinator logs a warning.
 */
export async function mappedOrg(orgs: OrgRepository, logger: Logger, org: string, group: string): Promise<Org | null> {
  const found = UUID.test(org)
    ? [await orgs.findById(org.toLowerCase())].filter((o): o is Org => o !== null)
    : await orgs.listByName(org, 2);
  if (found.length === 1) return found[0]!;
  logger.warn(
    { org, group },
    found.length === 0
      ? 'single sign-on: the role map names an organization that does not exist'
      : 'single sign-on: the role map names an organization by a name several organizations have; name it by its id',
  );
  return null;
}
