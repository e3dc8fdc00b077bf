import type { Repositories } from '../model/repositories.js';
import type { Member, MemberChange, Role } from '../model/orgs.js';
import { conflict, notFound } from '../../errors.js';

/** An organization keeps an owner: its last one can be neither demoted nor removed. */
export function roleChangeRefusal(current: Role, next: Role | null, owners: number): 'last_owner' | null {
  return current === 'owner' && next !== 'owner' && owners <= 1 ? 'last_owner' : null;
}

/**
 * What a role change or removal revoked with it, as audit entries (an owner's revocation would
 * record the same, with why): the pending invitations of a member who is no owner afterwards
 * (inviting is an owner's right, and an invitation never outlasts its inviter's), and the open
 * enrollment tokens of one who may enroll no agent afterwards.
 */
export function revocationsOf(change: MemberChange) {
  return [
    ...change.revokedInvitations.map((invitation) => ({
      action: 'invitation.revoke' as const,
      targetType: 'invitation' as const,
      targetId: invitation.id,
      metadata: {
        email: invitation.email,
        role: invitation.role,
        expiresAt: invitation.expiresAt,
        reason: 'inviter_not_owner',
      },
    })),
    ...change.revokedEnrollmentTokens.map((token) => ({
      action: 'enrollment_token.revoke' as const,
      targetType: 'enrollment_token' as const,
      targetId: token.id,
      metadata: { name: token.name, reason: 'maker_cannot_enroll' },
    })),
  ];
}

/**
 * Changes a member's role; the last owner cannot be demoted (409). What it revoked with it is in
 * the MemberChange (revocationsOf).
 */
export async function changeMemberRole(
  repos: Repositories,
  orgId: string,
  userId: string,
  role: Role,
  at: string,
): Promise<{ member: Member; previousRole: Role } & MemberChange> {
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
    revokedEnrollmentTokens: outcome.revokedEnrollmentTokens,
  };
}

/**
 * Removes a member; the last owner cannot be removed (409). Returns the removed membership, and
 * what was revoked with it (revocationsOf).
 */
export async function removeMember(
  repos: Repositories,
  orgId: string,
  userId: string,
  at: string,
): Promise<{ member: Member } & MemberChange> {
  const before = await repos.orgs.findMember(orgId, userId);
  if (!before) throw notFound('Member');
  const outcome = await repos.orgs.removeMember(orgId, userId, at);
  if (outcome === 'not_found') throw notFound('Member');
  if (outcome === 'last_owner') {
    throw conflict('The last owner of an organization cannot be removed; make another member an owner first');
  }
  return {
    member: before,
    revokedInvitations: outcome.revokedInvitations,
    revokedEnrollmentTokens: outcome.revokedEnrollmentTokens,
  };
}

async function mustFindMember(repos: Repositories, orgId: string, userId: string): Promise<Member> {
  const member = await repos.orgs.findMember(orgId, userId);
  // Removed by a concurrent call between our write and this read.
  if (!member) throw notFound('Member');
  return member;
}
