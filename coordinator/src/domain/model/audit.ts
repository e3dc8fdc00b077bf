export type ActorType = 'user' | 'api_token' | 'agent' | 'system';

/**
 * Every action the audit log records, each written only through this list (`AuditEntryInput`
 * takes nothing else), so that the dashboard's words for them and docs/management.md ("Audit
 * log") can be checked to name them all (test/browser/audit.test.ts).
 */
export const AUDIT_ACTIONS = [
  'org.create',
  'org.retention.update',
  'member.add',
  'invitation.create',
  'invitation.revoke',
  'invitation.accept',
  'invitation.decline',
  'member.update',
  'member.remove',
  'enrollment_token.create',
  'agent.enroll',
  'agent.rename',
  'agent.labels',
  'agent.revoke',
  'enrollment.lockout',
  'workflow.update_limits',
  'trigger.create',
  'trigger.update',
  'trigger.delete',
  'trigger.run',
  'trigger.force_run',
  'job.cancel',
  'batch.cancel',
  'api_token.issue',
  'api_token.revoke',
  'api_token.discover',
  'rate_limit.block',
  'auth.lockout',
  'auth.password_change',
  'auth.sign_out_everywhere',
  'storage_binding.create',
  'storage_binding.delete',
  'file.delete',
  'app.create',
  'app.update',
  'app.delete',
  'release.create',
  'release.update',
  'release.publish',
  'release.yank',
  'release.rollout.start',
  'release.rollout.advance',
  'release.rollout.pause',
  'release.rollout.resume',
  'release.rollout.abort',
  'release.rollout.complete',
  'device.bind',
  'device.update',
  'device.unbind',
  'device.reconcile',
  'chat_integration.connect',
  'chat_integration.disconnect',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntryInput {
  orgId: string | null;
  actorType: ActorType;
  actorId: string | null;
  action: AuditAction;
  targetType?: string | null;
  targetId?: string | null;
  metadata?: Record<string, unknown>;
  createdAt: string;
}

export interface AuditEntry {
  id: number;
  orgId: string | null;
  actorType: ActorType;
  actorId: string | null;
  action: string;
  targetType: string | null;
  targetId: string | null;
  metadata: Record<string, unknown>;
  createdAt: string;
}

export interface AuditQuery {
  action?: string | undefined;
  actorType?: ActorType | undefined;
  actorId?: string | undefined;
  targetType?: string | undefined;
  targetId?: string | undefined;
  /** Stored times (UTC ISO): entries created at or after `createdAfter` and before `createdBefore`. */
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  limit: number;
  /** Entries with an id below this one (the previous page's last id). */
  before?: number | undefined;
}

export interface AuditRepository {
  /** Inserts the entries in one statement. */
  insertMany(entries: readonly AuditEntryInput[]): Promise<void>;
  /**
   * `insertMany` of the entries `take` returns, called when the write runs: on SQLite in the group
   * commit at the end of the event-loop turn (so what was recorded until then goes in too), on
   * PostgreSQL at once. It may be called twice (the group commit may run an operation again) and
   * must then return the same entries.
   */
  insertTaken(take: () => readonly AuditEntryInput[]): Promise<void>;
  /** Newest first. */
  list(orgId: string, query: AuditQuery): Promise<AuditEntry[]>;
}
