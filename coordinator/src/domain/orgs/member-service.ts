import type { Member, MemberChange, Role } from '../model/orgs.js';
import type { Repositories } from '../model/repositories.js';
import { isoAt, type Clock } from '../../util/clock.js';
import { userAction, type AuditLog, type UserActor } from '../audit/audit-log.js';
import { changeMemberRole, removeMember, revocationsOf } from './members.js';

/**
 * Members of an organization (docs/management.md, "Members"): given another role, removed; an
 * organization keeps at least one owner. A member who is no owner afterwards loses the pending
 * invitations they sent; one who may enroll no agent afterwards, their open enrollment tokens.
 * Each change, and each revocation it made, is audited. Owners only:
 * the caller checks that. Members join by accepting an invitation (InvitationService).
 */
export class MemberService {
  constructor(
    private readonly deps: {
      repos: Repositories;
      audit: AuditLog;
      clock: Clock;
    },
  ) {}

  list(actor: UserActor): Promise<Member[]> {
    return this.deps.repos.orgs.listMembers(actor.orgId);
  }

  async changeRole(actor: UserActor, userId: string, role: Role): Promise<Member> {
    const { repos, audit, clock } = this.deps;
    const { member, previousRole, ...change } = await changeMemberRole(
      repos,
      actor.orgId,
      userId,
      role,
      isoAt(clock.now()),
    );
    if (previousRole !== member.role) {
      await audit.record(
        userAction(actor, 'member.update', 'user', member.userId, {
          email: member.email,
          from: previousRole,
          to: member.role,
        }),
      );
    }
    await this.recordRevoked(actor, change);
    return member;
  }

  async remove(actor: UserActor, userId: string): Promise<Member> {
    const { repos, audit, clock } = this.deps;
    const { member, ...change } = await removeMember(repos, actor.orgId, userId, isoAt(clock.now()));
    await audit.record(
      userAction(actor, 'member.remove', 'user', member.userId, { email: member.email, role: member.role }),
    );
    await this.recordRevoked(actor, change);
    return member;
  }

  /** What a change revoked, each audited as its revocation by hand would be, saying why. */
  private async recordRevoked(actor: UserActor, change: MemberChange): Promise<void> {
    for (const r of revocationsOf(change)) {
      await this.deps.audit.record(userAction(actor, r.action, r.targetType, r.targetId, r.metadata));
    }
  }
}
