import type { Role } from '@drover/shared';

export { ROLES, type Role } from '@drover/shared';

export interface Org {
  id: string;
  name: string;
  createdAt: string;
}

export interface OrgWithRole extends Org {
  role: Role;
}

export interface Member {
  userId: string;
  email: string;
  role: Role;
  joinedAt: string;
  /** The single sign-on group whose role map entry set the role; null for a membership the owners manage. */
  ssoGroup: string | null;
}

/** The role map sets a role, for `group`: the membership is the map's from then on (docs/sso.md, "The role map"). */
export interface RoleMapMark {
  group: string;
}

/** The role map's grant withdrawn: the member removed (`to` null) or given back the role before. */
export interface RoleMapWithdrawal extends MemberChange {
  from: Role;
  to: Role | null;
  /** The group that had set the role. */
  group: string;
}

/** A membership whose role the role map set. */
export interface RoleMapMembership {
  orgId: string;
  orgName: string;
  role: Role;
  group: string;
  /** The role before the map first set it; null when the map added the member. */
  roleBefore: Role | null;
}

/**
 * Whether moving a member from `current` to `next` (null: removing them) is refused, given how
 * many owners the organization has (domain/orgs/members.ts); run inside the change.
 */
export type RoleChangeRefusal = (current: Role, next: Role | null, owners: number) => 'last_owner' | null;

/** A pending invitation a role change or removal revoked: its inviter is no owner any more. */
export interface RevokedInvitation {
  id: string;
  email: string;
  role: Role;
  expiresAt: string;
}

/** An open enrollment token a role change or removal revoked: its maker may enroll no agent any more. */
export interface RevokedEnrollmentToken {
  id: string;
  name: string | null;
}

/**
 * A role change or removal that was made, with the pending invitations of the member it revoked
 * (when the member is no owner afterwards; none otherwise) and their open enrollment tokens (when
 * they may enroll no agent afterwards: removed, or a viewer).
 */
export interface MemberChange {
  revokedInvitations: RevokedInvitation[];
  revokedEnrollmentTokens: RevokedEnrollmentToken[];
}

export interface OrgRepository {
  /** Creates the organization with `ownerId` as its owner, in one transaction. */
  create(org: Org, ownerId: string): Promise<void>;
  findById(id: string): Promise<Org | null>;
  /** The organizations of this exact name (names are not unique), oldest first, at most `limit`. */
  listByName(name: string, limit: number): Promise<Org[]>;
  listForUser(userId: string): Promise<OrgWithRole[]>;
  roleOf(orgId: string, userId: string): Promise<Role | null>;
  listMembers(orgId: string): Promise<Member[]>;
  findMember(orgId: string, userId: string): Promise<Member | null>;
  /**
   * Adds a user as a member; false when they are one already. For tests and tools: people join
   * by accepting an invitation (InvitationRepository.accept).
   */
  addMember(orgId: string, userId: string, role: Role, at: string, mark?: RoleMapMark): Promise<boolean>;
  /**
   * Changes a role; refuses to demote the last owner. A member who is no owner afterwards loses
   * the pending invitations they sent (revoked at `at`), in the same transaction. `mark`: the role
   * map sets it; without, an owner does, and of a membership the map set, that role is also the
   * one the map's withdrawal gives back.
   */
  setRole(
    orgId: string,
    userId: string,
    role: Role,
    at: string,
    mark?: RoleMapMark,
  ): Promise<MemberChange | 'last_owner' | 'not_found'>;
  /**
   * Withdraws the role map's grant (the membership as it is under the organization's lock): removes
   * a member the map added, gives one it moved their role before; refuses for the last owner;
   * `not_found` when the membership is not the map's (any more).
   */
  withdrawRoleMap(orgId: string, userId: string, at: string): Promise<RoleMapWithdrawal | 'last_owner' | 'not_found'>;
  /** Names `group` as the one that set a role the map set before, when another group did. */
  keepMapGroup(orgId: string, userId: string, group: string): Promise<void>;
  /** The user's memberships whose role the role map set. */
  listRoleMapMemberships(userId: string): Promise<RoleMapMembership[]>;
  /**
   * Removes a member; refuses to remove the last owner. Their pending invitations are revoked at
   * `at`, in the same transaction.
   */
  removeMember(orgId: string, userId: string, at: string): Promise<MemberChange | 'last_owner' | 'not_found'>;
  count(): Promise<number>;
}
