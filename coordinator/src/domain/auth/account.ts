import type { OrgRepository } from '../model/orgs.js';
import type { UserRepository } from '../model/users.js';
import { invalid, unauthorized } from '../../errors.js';
import type { AuditLog, AuditRecord } from '../audit/audit-log.js';
import { checkNewPassword, hashPassword } from './passwords.js';
import type { SessionService } from './sessions.js';
import type { SignedIn, SignInService } from './sign-in.js';

export interface ChangePasswordInput {
  currentPassword: string;
  newPassword: string;
}

/**
 * A signed-in user's own account (docs/management.md, "Your account"): changing the password,
 * which asks for the current one (checked against the sign-in throttles) and ends every other
 * session of the user, and signing out everywhere, which ends them all. Both are audited in
 * every organization of the user.
 */
export class AccountService {
  constructor(
    private readonly deps: {
      users: UserRepository;
      orgs: OrgRepository;
      sessions: SessionService;
      signIn: SignInService;
      audit: AuditLog;
    },
  ) {}

  /**
   * Changes the password of the session's user, from `address` (the sign-in throttles count a
   * wrong current password as a failed sign-in). Every session issued before, this one included,
   * ends; the answer is a new session for the caller, as a sign-in's.
   */
  async changePassword(userId: string, input: ChangePasswordInput, address: string): Promise<SignedIn> {
    const { users, sessions, signIn } = this.deps;
    checkNewPassword(input.newPassword, 'body.newPassword');
    if (input.newPassword === input.currentPassword) {
      throw invalid('body.newPassword', 'must differ from the current password');
    }
    const user = await users.findById(userId);
    if (!user) throw unauthorized('The session user no longer exists');
    const checked = await signIn.checkPassword(user.email, input.currentPassword, address);
    // The email names this user (emails are unique); a check that found another would be a bug.
    if (!checked || checked.id !== userId) throw invalid('body.currentPassword', 'is not your current password');
    const generation = await users.setPassword(userId, await hashPassword(input.newPassword));
    if (generation === null) throw unauthorized('The session user no longer exists');
    await this.audit(userId, 'auth.password_change', user.email);
    const session = await sessions.issue(userId, generation);
    return { ...session, user: { id: user.id, email: user.email, createdAt: user.createdAt } };
  }

  /** Ends every session of the user, the caller's included, on every coordinator. */
  async signOutEverywhere(userId: string): Promise<void> {
    const user = await this.deps.users.findById(userId);
    if (!user || (await this.deps.sessions.endAll(userId)) === null) {
      throw unauthorized('The session user no longer exists');
    }
    await this.audit(userId, 'auth.sign_out_everywhere', user.email);
  }

  /** One entry in each organization of the user; one without an organization when they have none. */
  private async audit(
    userId: string,
    action: 'auth.password_change' | 'auth.sign_out_everywhere',
    email: string,
  ): Promise<void> {
    const orgs = await this.deps.orgs.listForUser(userId);
    const orgIds = orgs.length > 0 ? orgs.map((o) => o.id) : [null];
    const entries: AuditRecord[] = orgIds.map((orgId) => ({
      orgId,
      actorType: 'user',
      actorId: userId,
      action,
      targetType: 'user',
      targetId: userId,
      metadata: { email },
    }));
    await Promise.all(entries.map((entry) => this.deps.audit.record(entry)));
  }
}
