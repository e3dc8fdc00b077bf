import type { Member, Role } from '../model/orgs.js';
import type { Repositories } from '../model/repositories.js';
import type { Clock } from '../../util/clock.js';
import { userAction, type AuditLog, type UserActor } from '../audit/audit-log.js';
import { changeMemberRole, removeMember } from './members.js';

/**
 * Members of an organization (docs/management.md, "Members"): given another role, removed; an
 * organization keeps at least one owner. Each change is audited. Owners only: the caller checks
 * that. Members join by accepting an invitation (InvitationService).
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
    const { repos, audit } = this.deps;
    const { member, previousRole } = await changeMemberRole(repos, actor.orgId, userId, role);
    if (previousRole !== member.role) {
      await audit.record(
        userAction(actor, 'member.update', 'user', member.userId, {
          email: member.email,
          from: previousRole,
          to: member.role,
        }),
      );
    }
    return member;
  }

  async remove(actor: UserActor, userId: string): Promise<Member> {
    const { repos, audit } = this.deps;
    const removed = await removeMember(repos, actor.orgId, userId);
    await audit.record(
      userAction(actor, 'member.remove', 'user', removed.userId, { email: removed.email, role: removed.role }),
    );
    return removed;
  }
}
