import type { Schema } from '@drover/shared/api';

/**
 * The management API's answers the dashboard reads (docs/management.md): the named shapes of the
 * OpenAPI document the coordinator serves, as generated into `@drover/shared/api` (`pnpm gen:api`).
 */

export type Role = Org['role'];

export type User = Schema<'User'>;

export type Session = Schema<'Session'>;
/** Which sign-in methods this coordinator offers (`GET /v1/auth/methods`). */
export type SignInMethods = Schema<'SignInMethods'>;
/** Why this browser's last single sign-on was refused (`GET /v1/auth/oidc/refusal`). */
export type OidcRefusal = Schema<'OidcRefusal'>;

export type Org = Schema<'Org'>;

export type AgentStatus = Agent['status'];

export type Agent = Schema<'Agent'>;

export type WorkflowParam = Schema<'WorkflowParam'>;

/** `paramsSchema` null: the workflow declares no params (its definition has no `params:`). */
export type Workflow = Schema<'Workflow'>;

export type JobLogLine = Schema<'JobLogLine'>;

/** A job as lists show it (`GET /orgs/:orgId/jobs`, docs/jobs.md "Reading jobs"). */
export type Job = Schema<'Job'>;

/** A chat run: who wrote the command, and where. */
export type ChatOrigin = NonNullable<Job['chatOrigin']>;

/** A chat message the job's end posts (its trigger's notification settings), and how its delivery goes. */
export type JobNotification = Schema<'JobNotification'>;

/** A job with a page of its log lines and its chat messages (`GET /jobs/:id`). */
export type JobDetail = Schema<'JobDetail'>;
