import type { Invitation } from '../model/invitations.js';
import type { OrgWithRole } from '../model/orgs.js';
import type { Repositories } from '../model/repositories.js';
import { conflict, notFound } from '../../errors.js';
import { isoAt, type Clock } from '../../util/clock.js';
import { userAction, type AuditLog, type UserActor } from '../audit/audit-log.js';
import { endedRefusal, invite, isFor, presented, type InviteInput } from './invitations.js';

/** A signed-in user acting for themselves, in no organization. */
export interface Invitee {
  userId: string;
  email: string;
}

/** What the audit log keeps of an invitation: never whether its email has an account. */
const auditView = (invitation: Invitation) => ({
  email: invitation.email,
  role: invitation.role,
  expiresAt: invitation.expiresAt,
});

/**
 * Invitations to organizations (docs/management.md, "Members"): an owner invites, lists and
 * revokes them; the invitee, signed in with the invited email, lists theirs and accepts or
 * declines each. Each step is audited in the organization.
 */
export class InvitationService {
  constructor(
    private readonly deps: {
      repos: Pick<Repositories, 'invitations' | 'orgs'>;
      audit: AuditLog;
      clock: Clock;
    },
  ) {}

  /** Invites someone to the actor's organization (owners only: the caller checks that). */
  async invite(actor: UserActor, input: InviteInput): Promise<Invitation> {
    const invitation = await invite(this.deps.repos, actor.orgId, actor.userId, input, this.deps.clock.now());
    await this.deps.audit.record(
      userAction(actor, 'invitation.create', 'invitation', invitation.id, auditView(invitation)),
    );
    return invitation;
  }

  /** The organization's pending invitations, newest first, those past their expiry as `expired`. */
  async listForOrg(actor: UserActor): Promise<Invitation[]> {
    const now = this.deps.clock.now();
    return (await this.deps.repos.invitations.listPending(actor.orgId)).map((i) => presented(i, now));
  }

  /** Revokes a pending invitation of the actor's organization, expired or not. */
  async revoke(actor: UserActor, invitationId: string): Promise<Invitation> {
    const now = this.deps.clock.now();
    const invitation = await this.deps.repos.invitations.findById(invitationId);
    if (!invitation || invitation.orgId !== actor.orgId) throw notFound('Invitation');
    if (invitation.status !== 'pending') throw endedRefusal(invitation, now)!;
    if (!(await this.deps.repos.invitations.end(invitationId, 'revoked', isoAt(now)))) {
      throw await this.refusalNow(invitationId, now);
    }
    await this.deps.audit.record(
      userAction(actor, 'invitation.revoke', 'invitation', invitation.id, auditView(invitation)),
    );
    return { ...invitation, status: 'revoked', endedAt: isoAt(now) };
  }

  /** The invitee's pending invitations that have not expired, newest first. */
  listMine(invitee: Invitee): Promise<Invitation[]> {
    return this.deps.repos.invitations.listForEmail(invitee.email, isoAt(this.deps.clock.now()));
  }

  /** Accepts an invitation addressed to the invitee: they are a member from now on. */
  async accept(invitee: Invitee, invitationId: string): Promise<OrgWithRole> {
    const now = this.deps.clock.now();
    const invitation = await this.mine(invitee, invitationId, now);
    const outcome = await this.deps.repos.invitations.accept(invitationId, invitee.userId, isoAt(now));
    if (outcome === 'not_pending') throw await this.refusalNow(invitationId, now);
    // About the new member (as member.update and member.remove are), so the log filters on them.
    await this.deps.audit.record(
      userAction({ orgId: invitation.orgId, userId: invitee.userId }, 'invitation.accept', 'user', invitee.userId, {
        ...auditView(invitation),
        invitationId: invitation.id,
      }),
    );
    const org = (await this.deps.repos.orgs.listForUser(invitee.userId)).find((o) => o.id === invitation.orgId);
    // Removed by an owner between the acceptance and this read.
    if (!org) throw notFound('Organization');
    return org;
  }

  /** Declines an invitation addressed to the invitee: it can no longer be accepted. */
  async decline(invitee: Invitee, invitationId: string): Promise<Invitation> {
    const now = this.deps.clock.now();
    const invitation = await this.mine(invitee, invitationId, now);
    if (!(await this.deps.repos.invitations.end(invitationId, 'declined', isoAt(now)))) {
      throw await this.refusalNow(invitationId, now);
    }
    await this.deps.audit.record(
      userAction({ orgId: invitation.orgId, userId: invitee.userId }, 'invitation.decline', 'user', invitee.userId, {
        ...auditView(invitation),
        invitationId: invitation.id,
      }),
    );
    return { ...invitation, status: 'declined', endedAt: isoAt(now) };
  }

  /** The invitation, when it is addressed to the invitee (404 otherwise) and can still be answered. */
  private async mine(invitee: Invitee, invitationId: string, now: number): Promise<Invitation> {
    const invitation = await this.deps.repos.invitations.findById(invitationId);
    if (!invitation || !isFor(invitation, invitee.email)) throw notFound('Invitation');
    const refusal = endedRefusal(invitation, now);
    if (refusal) throw refusal;
    return invitation;
  }

  /** Why a change found the invitation no longer pending: another request ended it meanwhile. */
  private async refusalNow(invitationId: string, now: number) {
    const current = await this.deps.repos.invitations.findById(invitationId);
    return (current && endedRefusal(current, now)) ?? conflict('The invitation changed meanwhile; read it again');
  }
}
