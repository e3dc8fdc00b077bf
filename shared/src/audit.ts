/** Who may act in an audit entry: a member, an API token, an agent, or the coordinator itself. */
export const AUDIT_ACTOR_TYPES = ['user', 'api_token', 'agent', 'system'] as const;
export type ActorType = (typeof AUDIT_ACTOR_TYPES)[number];

/**
 * Every action the audit log records, each written only through this list (the coordinator's
 * `AuditEntryInput` takes nothing else), so that the dashboard's words for them and docs/management.md ("Audit
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
  'enrollment_token.revoke',
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

/**
 * Every kind of target an audit entry names (`targetType`), each written only through this list
 * (the coordinator's `AuditEntryInput` takes nothing else), so that `drover audit --target-type`
 * refuses one no entry can have rather than list nothing.
 */
export const AUDIT_TARGET_TYPES = [
  'address',
  'agent',
  'api_token',
  'application',
  'batch',
  'chat_integration',
  'device_binding',
  'enrollment_token',
  'file',
  'invitation',
  'job',
  'org',
  'release',
  'storage_binding',
  'trigger',
  'user',
  'workflow',
] as const;
export type AuditTargetType = (typeof AUDIT_TARGET_TYPES)[number];
