import type { AuthenticatingApiToken } from '../model/api-tokens.js';
import { roleWithArticle } from '@drover/shared';
import { can } from '../orgs/permissions.js';
import type { ChatOrigin, JobSource } from '../model/jobs.js';
import type { Role } from '../model/orgs.js';
import type { RateLimits } from '../model/rate-limits.js';
import type { Trigger, TriggerType } from '../model/triggers.js';
import type { UserActor } from '../audit/audit-log.js';
import { TOKEN_RUNNABLE_TRIGGER_TYPES } from '../tokens/grants.js';
import { memberFileCaller, systemReaderFileCaller, tokenFileCaller, type FileCaller } from '../files/access.js';

/**
 * Who asks for a run (docs/trigger-runs.md): an API token, a member by hand, a schedule, someone
 * in a chat channel. Each says what the rules of a run need to know of it.
 */

/** Who asks for a run, as far as the rules care. */
export interface RunActor {
  /** The source of runs the actor stands for, recorded on the job. */
  source: Exclude<JobSource, 'ota'>;
  /** How the audit log names the actor. */
  auditActor: { actorType: 'api_token' | 'user' | 'system'; actorId: string | null };
  /** Why the actor may not force a run past the workflow's limits, or null when it may. */
  forceDenied: string | null;
  /** The types of trigger the actor may run; null: every type (a member, by hand). */
  runsTypes: readonly TriggerType[] | null;
  /** Recorded on the job. */
  apiTokenId: string | null;
  userId: string | null;
  /** The actor's own job limits (an API token's), applied with the workflow's; null: none. */
  limits: { id: string; limits: RateLimits } | null;
  /** Whose storage rights decide which files the run may be given. */
  files: FileCaller;
  /** Whether each accepted run gets its own `trigger.run` audit entry (runs by people do). */
  auditsRuns: boolean;
  /** A chat run's origin, recorded on the job; null for the other sources. */
  chat: ChatOrigin | null;
}

/** An API token calling `POST /v1/triggers/:id/run`. */
export function apiTokenActor(token: AuthenticatingApiToken): RunActor {
  return {
    source: 'webhook',
    runsTypes: TOKEN_RUNNABLE_TRIGGER_TYPES,
    auditActor: { actorType: 'api_token', actorId: token.id },
    forceDenied:
      token.issuerRole !== null && can(token.issuerRole, 'runs.force')
        ? null
        : "A forced run needs the owner role; the API token's issuer is not an owner of the organization",
    apiTokenId: token.id,
    userId: token.userId,
    limits: { id: token.id, limits: token.rateLimit },
    files: tokenFileCaller(token),
    auditsRuns: false,
    chat: null,
  };
}

/**
 * A member of the trigger's organization running it by hand (`POST
 * /v1/orgs/:orgId/triggers/:id/run`): no token, so no token limits; the workflow's apply. Any
 * member whose role may run triggers (not a viewer: the route refuses them) may run, an owner may force; the run may be given any active file of the organization.
 */
export function userActor(user: UserActor & { role: Role }): RunActor {
  return {
    source: 'manual',
    runsTypes: null,
    auditActor: { actorType: 'user', actorId: user.userId },
    forceDenied: can(user.role, 'runs.force')
      ? null
      : `A forced run needs the owner role; you are ${roleWithArticle(user.role)} of the organization`,
    apiTokenId: null,
    userId: user.userId,
    limits: null,
    files: memberFileCaller(user.orgId, user.userId),
    auditsRuns: true,
    chat: null,
  };
}

/**
 * A cron trigger's schedule firing an occurrence (docs/schedules.md): the system acts, with no
 * token, so no token limits; the workflow's apply and are never forced. The run is given the
 * files its fixed params name, any active file of the trigger's organization, and no others.
 */
export function scheduleActor(trigger: Pick<Trigger, 'id' | 'orgId'>): RunActor {
  return {
    source: 'cron',
    runsTypes: ['cron'],
    auditActor: { actorType: 'system', actorId: null },
    forceDenied: 'A scheduled run is never forced',
    apiTokenId: null,
    userId: null,
    limits: null,
    files: systemReaderFileCaller(trigger.orgId),
    auditsRuns: false,
    chat: null,
  };
}

/**
 * Someone in a connected chat channel running its trigger by keyword (docs/chat.md, "Chat
 * triggers"): anyone who can post there; no token, so no token limits (the workflow's apply);
 * never forced; audited with the chat user in the entry; may name any active file of the
 * organization by id.
 */
export function chatActor(trigger: Pick<Trigger, 'orgId'>, origin: ChatOrigin): RunActor {
  return {
    source: origin.provider,
    runsTypes: [origin.provider],
    auditActor: { actorType: 'system', actorId: null },
    forceDenied: 'A chat run is never forced',
    apiTokenId: null,
    userId: null,
    limits: null,
    files: systemReaderFileCaller(trigger.orgId),
    auditsRuns: true,
    chat: origin,
  };
}
