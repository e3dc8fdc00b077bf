import type { AuthenticatingApiToken } from '../model/api-tokens.js';
import { roleWithArticle } from '@drover/shared';
import { can } from '../orgs/permissions.js';
import type { Trigger, TriggerType } from '../model/triggers.js';
import { AppError, conflict, describeValue, forbidden, validationFailed, type ValidationDetail } from '../../errors.js';
import { findGrant } from '../tokens/grants.js';
import { MAX_REF_LENGTH, MAX_WORKFLOW_NAME_LENGTH, refProblem, WORKFLOW_NAME_PATTERN } from '../triggers/triggers.js';

/**
 * The rules of `POST /v1/triggers/:id/run` that depend on the actor and the trigger. The route's
 * JSON schema has already checked each field's type and length. Status codes and their order:
 * docs/trigger-runs.md.
 */

/** The body of a trigger run, as the route's schema lets it through. */
export interface TriggerRunBody {
  ref?: string;
  debug?: boolean;
  params?: Record<string, unknown>;
  workflowName?: string;
  force?: boolean;
  forceReason?: string;
}

export const MAX_FORCE_REASON_LENGTH = 1000;
export { MAX_REF_LENGTH };

const WORKFLOW_NAME = new RegExp(WORKFLOW_NAME_PATTERN);

/**
 * The trigger ids the token may run; a token without a trigger grant is 403, checked before the
 * trigger is looked up (docs/trigger-runs.md, "Status codes").
 */
export function requireTriggerGrant(token: Pick<AuthenticatingApiToken, 'scopes' | 'issuerRole'>): readonly string[] {
  if (token.issuerRole !== null && !can(token.issuerRole, 'triggers.run')) {
    throw forbidden(
      `The API token's issuer is ${roleWithArticle(token.issuerRole)} of the organization: its tokens run no triggers`,
    );
  }
  const grant = findGrant(token.scopes, 'trigger');
  if (!grant) throw forbidden('This API token has no trigger grant; it cannot run triggers');
  return grant.triggerIds;
}

/** The trigger (found in the token's organization, else 404 before this) is one the token may run. */
export function checkTriggerGranted(triggerIds: readonly string[], triggerId: string): void {
  if (!triggerIds.includes(triggerId)) throw forbidden("This trigger is outside the API token's trigger grant");
}

/** What a valid request asks for. */
export interface RunRequest {
  /** The workflow to run: the trigger's own (`scopeType: workflow`) or the body's (`agent`). */
  workflowName: string;
  ref: string | null;
  debug: boolean;
  forced: boolean;
  forceReason: string | null;
}

export interface RunTargetState {
  trigger: Trigger;
  /** The trigger's agent has been revoked: it can never run the job. */
  agentRevoked: boolean;
}

/**
 * Checks the request against the trigger and the actor: 403 for what the trigger or the actor
 * does not allow (checked first), 409 when the trigger's agent is revoked, then a 422 listing
 * every invalid field, by the request's field names (`ref`, `workflowName`, `forceReason`).
 */
export function resolveRunRequest(
  target: RunTargetState,
  body: TriggerRunBody,
  actor: { forceDenied: string | null; runsTypes: readonly TriggerType[] | null },
): RunRequest {
  const { trigger } = target;
  // An API token runs webhook triggers; a schedule its cron trigger; a member, by hand, any.
  if (actor.runsTypes !== null && !actor.runsTypes.includes(trigger.type)) {
    throw forbidden(
      `Trigger \`${trigger.name}\` is a ${trigger.type} trigger; only ${actor.runsTypes.join(' or ')} triggers can be run ${
        actor.runsTypes.includes('webhook') ? 'through the API' : 'this way'
      }`,
    );
  }
  const ref = body.ref ?? null;
  if (ref !== null && trigger.allowedRefs !== null && !trigger.allowedRefs.includes(ref)) {
    throw forbidden(`ref ${describeValue(ref)} is not among the refs this trigger accepts`);
  }
  if (body.debug === true && !trigger.allowDebug) throw forbidden('This trigger does not allow debug runs');
  const forced = body.force === true;
  if (forced && actor.forceDenied !== null) throw forbidden(actor.forceDenied);
  if (target.agentRevoked) throw conflict("The trigger's agent has been revoked; it can run nothing");

  const problems: ValidationDetail[] = [];
  const refRefused = ref === null ? null : (refLengthProblem(ref) ?? refProblem(ref));
  if (refRefused) problems.push({ path: 'ref', message: refRefused });
  if (ref === null && trigger.allowedRefs !== null) {
    problems.push({ path: 'ref', message: 'is required: this trigger accepts only listed refs' });
  }
  let workflowName: string;
  if (trigger.scopeType === 'workflow') {
    // Spec: `workflowName` is ignored for a workflow-scoped trigger.
    workflowName = trigger.workflowName ?? '';
  } else {
    workflowName = body.workflowName ?? '';
    if (body.workflowName === undefined) {
      problems.push({
        path: 'workflowName',
        message: 'is required: this trigger may run any workflow of its agent',
      });
    } else if (workflowName.length > MAX_WORKFLOW_NAME_LENGTH || !WORKFLOW_NAME.test(workflowName)) {
      problems.push({
        path: 'workflowName',
        message: `must be a workflow name (letters, digits, '_', '.', '-', at most ${MAX_WORKFLOW_NAME_LENGTH}), got ${describeValue(workflowName)}`,
      });
    }
  }
  let forceReason: string | null = null;
  if (forced) {
    forceReason = body.forceReason?.trim() ?? '';
    if (forceReason === '') problems.push({ path: 'forceReason', message: 'forceReason is required when force=true' });
    // Shown in the dashboard, the CLI's tables, chat messages and the audit log, as a ref is.
    const refused = refProblem(forceReason);
    if (refused) problems.push({ path: 'forceReason', message: refused });
  }
  // A forceReason without force is ignored: nothing is forced, so there is nothing to explain.
  if (problems.length > 0) {
    // A lone forceReason problem keeps the spec's wording as the whole message.
    const message = problems.length === 1 && forced && forceReason === '' ? problems[0]!.message : undefined;
    throw validationFailed(problems, message);
  }
  return { workflowName, ref, debug: body.debug === true, forced, forceReason };
}

/**
 * A ref's length, as the routes' schema bounds it (RunBodySchema): checked here too, because a
 * chat command's `ref=<value>` reaches the run without passing any schema. Characters counted as
 * the schema counts them, by code point.
 */
function refLengthProblem(ref: string): string | null {
  if (ref.length === 0) return 'must be at least 1 character long';
  // Code points are never more than UTF-16 units: counted only past the bound (this runs per call).
  if (ref.length > MAX_REF_LENGTH && [...ref].length > MAX_REF_LENGTH) {
    return `must be at most ${MAX_REF_LENGTH} characters long`;
  }
  return null;
}

/** 404 for a workflow that is not (or no longer) reported by the trigger's agent. */
export function workflowNotFound(workflowName: string): AppError {
  return new AppError('not_found', `Workflow \`${workflowName}\` is not reported by the trigger's agent`);
}

/** The dashboard page of a job (the `statusUrl` of docs/trigger-runs.md). */
export const statusUrl = (jobId: string): string => `/api/jobs/${jobId}`;
