import type { RevokedInvitation, Role } from './orgs.js';
import type { UserWithPassword } from './users.js';

/**
 * `pending` until the invitee accepts or declines it, an owner revokes it, or a new invitation of
 * the same email replaces it after it expired (`expired`). A pending invitation past its
 * `expiresAt` cannot be accepted: it is shown as `expired`.
 */
export type InvitationStatus = 'pending' | 'accepted' | 'declined' | 'revoked' | 'expired';

export interface Invitation {
  id: string;
  orgId: string;
  orgName: string;
  email: string;
  role: Role;
  status: InvitationStatus;
  /** The owner who invited (null once their account is gone). */
  invitedBy: { userId: string; email: string } | null;
  createdAt: string;
  expiresAt: string;
  /** When it was accepted, declined, revoked or replaced; null while pending. */
  endedAt: string | null;
}

export interface NewInvitation {
  id: string;
  orgId: string;
  email: string;
  role: Role;
  createdBy: string;
  createdAt: string;
  expiresAt: string;
}

export type InvitationEnd = 'declined' | 'revoked';

export interface InvitationRepository {
  /**
   * Records a pending invitation, in one transaction with what it depends on: `newUser`, when
   * given, is created first unless a user already has its email (whose account is left as it is);
   * a pending invitation of the same email that expired by `createdAt` is marked `expired`.
   * Refused, with nothing written: `inviter_not_owner` when `createdBy` is no owner of the
   * organization (demoted or removed since the caller checked), `already_member` when the email's
   * user belongs to the organization, `already_invited` when a pending invitation of the email has
   * not expired.
   */
  create(
    invitation: NewInvitation,
    newUser: UserWithPassword | null,
  ): Promise<'ok' | 'inviter_not_owner' | 'already_member' | 'already_invited'>;
  findById(id: string): Promise<Invitation | null>;
  /** The organization's pending invitations, expired ones included, newest first. */
  listPending(orgId: string): Promise<Invitation[]>;
  /** The pending invitations of an email (any case) that have not expired at `now`, newest first. */
  listForEmail(email: string, now: string): Promise<Invitation[]>;
  /**
   * Accepts the invitation for `userId`: when it is pending and not expired at `at`, marks it
   * `accepted` and adds the membership with its role, in one transaction. `not_pending` (nothing
   * written) otherwise; `already_member` when the user was a member already (the invitation is
   * accepted all the same, the role left as it was).
   */
  accept(id: string, userId: string, at: string): Promise<'ok' | 'already_member' | 'not_pending'>;
  /** Ends a pending invitation (expired or not) as declined or revoked; false when it was not pending. */
  end(id: string, status: InvitationEnd, at: string): Promise<boolean>;
  /**
   * Revokes every pending invitation `userId` sent, in every organization (their account's first
   * single sign-on: whoever held the inviter's password may have sent them); the ones it revoked.
   */
  revokeAllSentBy(userId: string, at: string): Promise<(RevokedInvitation & { orgId: string })[]>;
}
