import type { Repositories } from './model/repositories.js';
import type { Member, Role } from './model/orgs.js';
import { conflict, describeValue, invalid, notFound } from '../errors.js';
import { newId } from '../util/ids.js';
import { checkNewPassword, hashPassword } from './passwords.js';

export const MAX_EMAIL_LENGTH = 320;
// One @, something on each side, no spaces: deliverability is the mail system's business.
const EMAIL = /^[^\s@]+@[^\s@]+$/;

export interface AddMemberInput {
  email: string;
  password?: string | undefined;
  role: Role;
}

export interface AddMemberResult {
  member: Member;
  /** True when the user account was created by this call. */
  createdUser: boolean;
}

/**
 * Adds a member to an organization. An unknown email creates the user, which needs a password;
 * an existing user is added as is and a password given for them is refused (409), because one
 * organization's owner must not be able to set the password of an account that may belong to
 * other organizations too. Adding someone who is already a member is 409.
 */
export async function addMember(
  repos: Repositories,
  orgId: string,
  input: AddMemberInput,
  at: string,
): Promise<AddMemberResult> {
  const email = input.email.trim();
  if (!EMAIL.test(email) || email.length > MAX_EMAIL_LENGTH) {
    throw invalid('body.email', `must be an email address, got ${describeValue(input.email)}`);
  }
  const existing = await repos.users.findByEmail(email);
  if (existing) {
    if (input.password !== undefined) {
      throw conflict('A user with this email already exists; add them without a password (only they can change it)');
    }
    if (!(await repos.orgs.addMember(orgId, existing.id, input.role, at))) {
      throw conflict('This user is already a member of the organization');
    }
    return { member: await mustFindMember(repos, orgId, existing.id), createdUser: false };
  }
  if (input.password === undefined) throw invalid('body.password', 'is required to create a new user');
  checkNewPassword(input.password, 'body.password');
  const userId = newId();
  const passwordHash = await hashPassword(input.password);
  const outcome = await repos.orgs.createUserAndAddMember(
    { id: userId, email, passwordHash, createdAt: at },
    orgId,
    input.role,
  );
  // Another request created the same email between our lookup and our insert.
  if (outcome === 'email_taken')
    throw conflict('A user with this email was created meanwhile; add them without a password');
  return { member: await mustFindMember(repos, orgId, userId), createdUser: true };
}

/** An organization keeps an owner: its last one can be neither demoted nor removed. */
export function roleChangeRefusal(current: Role, next: Role | null, owners: number): 'last_owner' | null {
  return current === 'owner' && next !== 'owner' && owners <= 1 ? 'last_owner' : null;
}

/** Changes a member's role; the last owner cannot be demoted (409). */
export async function changeMemberRole(
  repos: Repositories,
  orgId: string,
  userId: string,
  role: Role,
): Promise<{ member: Member; previousRole: Role }> {
  const before = await repos.orgs.findMember(orgId, userId);
  if (!before) throw notFound('Member');
  const outcome = await repos.orgs.setRole(orgId, userId, role);
  if (outcome === 'not_found') throw notFound('Member');
  if (outcome === 'last_owner') {
    throw conflict('The last owner of an organization cannot be demoted; make another member an owner first');
  }
  return { member: await mustFindMember(repos, orgId, userId), previousRole: before.role };
}

/** Removes a member; the last owner cannot be removed (409). Returns the removed membership. */
export async function removeMember(repos: Repositories, orgId: string, userId: string): Promise<Member> {
  const before = await repos.orgs.findMember(orgId, userId);
  if (!before) throw notFound('Member');
  const outcome = await repos.orgs.removeMember(orgId, userId);
  if (outcome === 'not_found') throw notFound('Member');
  if (outcome === 'last_owner') {
    throw conflict('The last owner of an organization cannot be removed; make another member an owner first');
  }
  return before;
}

async function mustFindMember(repos: Repositories, orgId: string, userId: string): Promise<Member> {
  const member = await repos.orgs.findMember(orgId, userId);
  // Removed by a concurrent call between our write and this read.
  if (!member) throw notFound('Member');
  return member;
}
