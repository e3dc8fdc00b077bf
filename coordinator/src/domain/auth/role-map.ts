import type { Logger } from 'pino';
import { ROLES, type Role } from '@drover/shared';
import type { RoleMapping } from '../../config/sign-in-config.js';
import { userAction, type AuditLog } from '../audit/audit-log.js';
import type { MemberChange, Org, OrgRepository } from '../model/orgs.js';
import { revocationsOf } from '../orgs/members.js';
import { isoAt, type Clock } from '../../util/clock.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The organization an entry of the single sign-on role map names: by its id, or by its name when
 * exactly one organization has it. Names are not unique, and any signed-in user may create an
 * organization of any name: a name two organizations share maps to neither (an impostor's copy
 * must not receive the group's members, docs/sso.md), and the coordinator logs a warning.
 */
export async function mappedOrg(orgs: OrgRepository, logger: Logger, org: string, group: string): Promise<Org | null> {
  return (await resolveMappedOrg(orgs, logger, org, group)).org;
}

/** mappedOrg, saying also whether the entry names by a name several organizations have. */
async function resolveMappedOrg(
  orgs: OrgRepository,
  logger: Logger,
  org: string,
  group: string,
): Promise<{ org: Org | null; ambiguous: boolean }> {
  const found = UUID.test(org)
    ? [await orgs.findById(org.toLowerCase())].filter((o): o is Org => o !== null)
    : await orgs.listByName(org, 2);
  if (found.length === 1) return { org: found[0]!, ambiguous: false };
  logger.warn(
    { org, group },
    found.length === 0
      ? 'single sign-on: the role map names an organization that does not exist'
      : 'single sign-on: the role map names an organization by a name several organizations have; name it by its id',
  );
  return { org: null, ambiguous: found.length > 1 };
}

export interface RoleMapDeps {
  orgs: OrgRepository;
  audit: AuditLog;
  clock: Clock;
  logger: Logger;
  roleMap: Readonly<Record<string, RoleMapping>>;
}

/**
 * Applies the role map to a user who signed in with `groups` (docs/sso.md, "The role map"): in each
 * organization a group of theirs names, they become a member with the role it names (the highest
 * when several name one organization), or are moved to it; the membership is the map's from then
 * on. A membership of the map's that none of their groups names any more loses the map's grant:
 * the member is removed when the map added them, or given back the role they had before it (never
 * the last owner). Not in an organization whose name an entry of their groups names while several
 * organizations have it (which one it meant is not known; anyone may make an organization of any
 * name, and a copy must not keep the map from withdrawing elsewhere), and not at all when the
 * provider did not send all their groups.
 * Organizations the map never touched are left as they are. Each change is audited.
 */
export async function applyRoleMap(
  deps: RoleMapDeps,
  signedIn: {
    userId: string;
    email: string;
    groups: readonly string[];
    /** False when the provider left some groups out: nothing is withdrawn then. */
    allGroupsKnown: boolean;
  },
): Promise<void> {
  const { userId, email, groups } = signedIn;
  const { orgs, logger, roleMap } = deps;
  // By organization, once each entry is resolved: one map may name an organization by its id in
  // one entry and by its name in another.
  const wanted = new Map<string, { org: Org; role: Role; group: string }>();
  // Names that several organizations have: which one an entry naming it meant is not known.
  const ambiguous = new Set<string>();
  for (const group of groups) {
    const mapping: RoleMapping | undefined = roleMap[group];
    if (!mapping) continue;
    const resolved = await resolveMappedOrg(orgs, logger, mapping.org, group);
    if (resolved.ambiguous) ambiguous.add(mapping.org);
    const org = resolved.org;
    if (!org) continue;
    const before = wanted.get(org.id);
    if (!before || ROLES.indexOf(mapping.role) < ROLES.indexOf(before.role))
      wanted.set(org.id, { org, role: mapping.role, group });
  }
  for (const grant of wanted.values()) await grantRole(deps, userId, email, grant);
  if (!signedIn.allGroupsKnown) return;
  for (const held of await orgs.listRoleMapMemberships(userId)) {
    if (!wanted.has(held.orgId) && !ambiguous.has(held.orgName)) await withdraw(deps, userId, email, held.orgId);
  }
}

async function grantRole(
  deps: RoleMapDeps,
  userId: string,
  email: string,
  { org, role, group }: { org: Org; role: Role; group: string },
): Promise<void> {
  const { orgs, clock, logger } = deps;
  const member = await orgs.findMember(org.id, userId);
  const metadata = { email, via: 'sso', group };
  if (member === null) {
    if (await orgs.addMember(org.id, userId, role, isoAt(clock.now()), { group })) {
      await record(deps, org.id, userId, 'member.add', { ...metadata, role });
    }
  } else if (member.role !== role) {
    const outcome = await orgs.setRole(org.id, userId, role, isoAt(clock.now()), { group });
    if (typeof outcome === 'object') {
      await record(deps, org.id, userId, 'member.update', { ...metadata, from: member.role, to: role });
      await recordRevocations(deps, org.id, userId, outcome);
    } else {
      logger.warn({ org: org.name, userId, outcome }, 'single sign-on: the role map could not change the role');
    }
  } else if (member.ssoGroup !== null && member.ssoGroup !== group) {
    await orgs.keepMapGroup(org.id, userId, group);
  }
}

async function withdraw(deps: RoleMapDeps, userId: string, email: string, orgId: string): Promise<void> {
  const { orgs, clock, logger } = deps;
  const outcome = await orgs.withdrawRoleMap(orgId, userId, isoAt(clock.now()));
  if (outcome === 'not_found') return; // not the map's any more
  if (outcome === 'last_owner') {
    logger.warn(
      { orgId, userId },
      "single sign-on: the user's groups no longer name this organization, but they are its last owner: kept",
    );
    return;
  }
  const metadata = { email, via: 'sso', group: outcome.group, reason: 'sso_group_left' };
  if (outcome.to === null) {
    await record(deps, orgId, userId, 'member.remove', { ...metadata, role: outcome.from });
  } else if (outcome.to !== outcome.from) {
    await record(deps, orgId, userId, 'member.update', { ...metadata, from: outcome.from, to: outcome.to });
  }
  await recordRevocations(deps, orgId, userId, outcome);
}

function record(
  deps: RoleMapDeps,
  orgId: string,
  userId: string,
  action: 'member.add' | 'member.update' | 'member.remove',
  metadata: Record<string, unknown>,
): Promise<void> {
  return deps.audit.record(userAction({ orgId, userId }, action, 'user', userId, metadata));
}

/** A demoted owner's pending invitations, a viewer's open enrollment tokens, went with the role (OrgRepository.setRole). */
async function recordRevocations(
  deps: RoleMapDeps,
  orgId: string,
  userId: string,
  change: MemberChange,
): Promise<void> {
  for (const r of revocationsOf(change)) {
    const metadata = { ...r.metadata, via: 'sso' };
    await deps.audit.record(userAction({ orgId, userId }, r.action, r.targetType, r.targetId, metadata));
  }
}
