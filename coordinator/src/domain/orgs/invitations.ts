import type { Invitation } from '../model/invitations.js';
import type { Repositories } from '../model/repositories.js';
import type { Role } from '../model/orgs.js';
import type { UserWithPassword } from '../model/users.js';
import { AppError, conflict, describeValue, forbidden, invalid, notFound } from '../../errors.js';
import { isoAt } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { checkNewPassword, hashPassword } from '../auth/passwords.js';
import { isEmailAddress, sameEmail } from '../emails.js';

/** How long an invitation waits for its invitee. */
export const INVITATION_TTL_MS = 7 * 24 * 3600_000;

export interface InviteInput {
  email: string;
  /** A first password, for an email that has no account yet; unused for one that has. */
  password?: string | undefined;
  role: Role;
}

/**
 * Invites someone to an organization (docs/management.md, "Members"): a pending invitation that
 * its invitee accepts, signed in with the email's account, before they are a member. Nobody joins
 * an organization without saying so. The answer is the same for an email that has an account and
 * one that has not, so an owner (any signed-in user can own an organization) cannot learn who has
 * one: a `password` is checked and hashed either way, and becomes the first password of the
 * account only when the email has none yet. Refused: a member of the organization already, and an
 * email with a pending invitation that has not expired (409); an expired one is replaced; an
 * inviter demoted or removed since their request was let in (403: a demotion revokes the
 * inviter's pending invitations, and none may be made after it).
 */
export async function invite(
  repos: Pick<Repositories, 'invitations'>,
  orgId: string,
  invitedBy: string,
  input: InviteInput,
  nowMs: number,
): Promise<Invitation> {
  const email = input.email.trim();
  if (!isEmailAddress(email)) {
    throw invalid('body.email', `must be an email address, got ${describeValue(input.email)}`);
  }
  const at = isoAt(nowMs);
  let newUser: UserWithPassword | null = null;
  if (input.password !== undefined) {
    checkNewPassword(input.password, 'body.password');
    newUser = { id: newId(), email, passwordHash: await hashPassword(input.password), createdAt: at };
  }
  const id = newId();
  const outcome = await repos.invitations.create(
    {
      id,
      orgId,
      email,
      role: input.role,
      createdBy: invitedBy,
      createdAt: at,
      expiresAt: isoAt(nowMs + INVITATION_TTL_MS),
    },
    newUser,
  );
  if (outcome === 'inviter_not_owner') throw forbidden('Only owners of the organization can do this');
  if (outcome === 'already_member') throw conflict('This email belongs to a member of the organization already');
  if (outcome === 'already_invited') {
    throw conflict('This email has a pending invitation to the organization already; revoke it to invite again');
  }
  const invitation = await repos.invitations.findById(id);
  // Gone between the write and this read: its organization was deleted meanwhile.
  if (!invitation) throw notFound('Invitation');
  return invitation;
}

/** The invitation as the API shows it: a pending one past its expiry is `expired`. */
export function presented(invitation: Invitation, nowMs: number): Invitation {
  return invitation.status === 'pending' && Date.parse(invitation.expiresAt) <= nowMs
    ? { ...invitation, status: 'expired' }
    : invitation;
}

/**
 * Why an invitation can no longer be accepted, declined or revoked, or null while it can: 409 when
 * it was accepted, 410 when it was revoked, declined or has expired (docs/errors.md).
 */
export function endedRefusal(invitation: Invitation, nowMs: number): AppError | null {
  switch (presented(invitation, nowMs).status) {
    case 'pending':
      return null;
    case 'accepted':
      return conflict('This invitation was accepted already');
    case 'declined':
      return new AppError('invitation_revoked', 'This invitation was declined by its invitee');
    case 'revoked':
      return new AppError('invitation_revoked', 'This invitation was revoked by an owner of the organization');
    case 'expired':
      return new AppError(
        'invitation_expired',
        `This invitation expired at ${invitation.expiresAt}; an owner of the organization can invite again`,
      );
  }
}

/**
 * Whether the invitation is addressed to this email (the same account's, `sameEmail`: any case of
 * its ASCII letters, as both databases compare emails): no one else may see it.
 */
export const isFor = (invitation: Invitation, email: string): boolean => sameEmail(invitation.email, email);
