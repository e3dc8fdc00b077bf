import type { Schema } from '@drover/shared/api';

/**
 * The Audit log page's words for what the coordinator records: actions, kinds of actor and of
 * target. Data only (no code imported), so that a test can hold it against the coordinator's list.
 */

/**
 * Each action the coordinator records as the page says it (docs/management.md, "Audit log"): the
 * verb between who acted and the target ("alice@example.com **revoked** the API token ci"). The
 * page's action filter offers these; test/browser/audit.test.ts checks that every action the
 * coordinator can record is here.
 */
export const AUDIT_ACTIONS: Record<Schema<'AuditEntry'>['action'], string> = {
  'org.create': 'created',
  'org.retention.update': 'changed the retention of',
  'member.add': 'added',
  'invitation.create': 'created',
  'invitation.revoke': 'revoked',
  'invitation.accept': 'accepted an invitation and joined',
  'invitation.decline': 'declined an invitation',
  'member.update': 'changed the role of',
  'member.remove': 'removed',
  'enrollment_token.create': 'created',
  'enrollment_token.revoke': 'revoked',
  'agent.enroll': 'enrolled',
  'agent.rename': 'renamed',
  'agent.labels': 'changed the labels of',
  'agent.revoke': 'revoked',
  'enrollment.lockout': 'blocked, after failed enrollments,',
  'workflow.update_limits': 'changed the limits of',
  'trigger.create': 'created',
  'trigger.update': 'changed',
  'trigger.delete': 'deleted',
  'trigger.run': 'ran by hand',
  'trigger.force_run': 'forced a run of',
  'job.cancel': 'cancelled',
  'batch.cancel': 'cancelled the unfinished jobs of',
  'api_token.issue': 'issued',
  'api_token.revoke': 'revoked',
  'api_token.discover': 'listed what it may use',
  'rate_limit.block': 'was held back by the rate limit of',
  'auth.lockout': 'locked, after failed sign-ins,',
  'auth.password_change': 'changed their password',
  'auth.sign_out_everywhere': 'signed out everywhere',
  'storage_binding.create': 'created',
  'storage_binding.delete': 'deleted',
  'file.delete': 'deleted',
  'app.create': 'created',
  'app.update': 'changed',
  'app.delete': 'deleted',
  'release.create': 'created',
  'release.update': 'changed',
  'release.publish': 'published',
  'release.yank': 'yanked',
  'release.rollout.start': 'started the rollout of',
  'release.rollout.advance': 'advanced the rollout of',
  'release.rollout.pause': 'paused the rollout of',
  'release.rollout.resume': 'resumed the rollout of',
  'release.rollout.abort': 'aborted the rollout of',
  'release.rollout.complete': 'completed the rollout of',
  'device.bind': 'bound',
  'device.update': 'changed',
  'device.unbind': 'unbound',
  'device.reconcile': 'reconciled',
  'chat_integration.connect': 'connected',
  'chat_integration.disconnect': 'disconnected',
};

/** Actions whose target is the actor itself: the sentence names it once. */
export const SELF_TARGETED = new Set(['api_token.discover']);

export const ACTOR_TYPES: Record<Schema<'AuditEntry'>['actorType'], string> = {
  user: 'a member',
  api_token: 'an API token',
  agent: 'an agent',
  system: 'the coordinator',
};

export const TARGET_TYPES: Record<string, string> = {
  user: 'member',
  agent: 'agent',
  trigger: 'trigger',
  job: 'job',
  batch: 'batch',
  workflow: 'workflow',
  api_token: 'API token',
  enrollment_token: 'enrollment token',
  storage_binding: 'storage binding',
  file: 'file',
  org: 'organization',
  address: 'client address',
  device_binding: 'device',
  application: 'application',
  release: 'release',
  chat_integration: 'chat workspace',
  invitation: 'invitation of',
};
