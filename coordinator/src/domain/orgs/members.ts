import type { Repositories } from '../model/repositories.js';
import type { Member, RevokedInvitation, Role } from '../model/orgs.js';
import { conflict, notFound } from '../../errors.js';

/** An organization keeps an owner: its last one can be neither demoted nor removed. */
export function roleChangeRefusal(current: Role, next: Role | null, owners: number): 'last_owner' | null {
  return current === 'owner' && next !== 'owner' && owners <= 1 ? 'last_owner' : null;
}

/**
 * Changes a member's role; the last owner cannot be demoted (409). A member who is no owner
 * afterwards loses the pending invitations they sent (`revokedInvitations`): inviting is an
 * owner's right, and an invitation never outlasts its inviter's.
 */
export async function changeMemberRole(
  repos: Repositories,
  orgId: string,
  userId: string,
  role: Role,
  at: string,
): Promise<{ member: Member; previousRole: Role; revokedInvitations: RevokedInvitation[] }> {
  const before = await repos.orgs.findMember(orgId, userId);
  if (!before) throw notFound('Member');
  const outcome = await repos.orgs.setRole(orgId, userId, role, at);
  if (outcome === 'not_found') throw notFound('Member');
  if (outcome === 'last_owner') {
    throw conflict('The last owner of an organization cannot be demoted; make another member an owner first');
  }
  return {
    member: await mustFindMember(repos, orgId, userId),
    previousRole: before.role,
    revokedInvitations: outcome.revokedInvitations,
  };
}

/**
 * Removes a member; the last owner cannot be removed (409). Returns the removed membership, and
 * the pending invitations they sent, revoked with it.
 */
export async function removeMember(
  repos: Repositories,
  orgId: string,
  userId: string,
  at: string,
): Promise<{ member: Member; revokedInvitations: RevokedInvitation[] }> {
  const before = await repos.orgs.findMember(orgId, userId);
  if (!before) throw notFound('Member');
  const outcome = await repos.orgs.removeMember(orgId, userId, at);
  if (outcome === 'not_found') throw notFound('Member');
  if (outcome === 'last_owner') {
    throw conflict('The last owner of an organization cannot be removed; make another member an owner first');
  }
  return { member: before, revokedInvitations: outcome.revokedInvitations };
}

async function mustFindMember(repos: Repositories, orgId: string, userId: string): Promise<Member> {
  const member = await repos.orgs.findMember(orgId, userId);
  // Removed by a concurrent call between our write and this read.
  if (!member) throw notFound('Member');
  return member;
}
