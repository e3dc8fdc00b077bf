import type { RateLimits } from '../model/rate-limits.js';
import type { Repositories } from '../model/repositories.js';
import type { Workflow } from '../model/workflows.js';
import { notFound } from '../../errors.js';

/** Largest value of one workflow rate-limit window; null means no limit. */
export const MAX_WORKFLOW_RATE_LIMIT = 1_000_000_000;

/** The body of `PATCH /orgs/:orgId/workflows/:workflowId`: any subset of the three windows. */
export interface WorkflowLimitsPatch {
  rateLimitPerMinute?: number | null;
  rateLimitPerHour?: number | null;
  rateLimitPerDay?: number | null;
}

/** The limits after a patch: a key given (a number or null) replaces, a key left out keeps. */
export function mergeRateLimits(current: RateLimits, patch: WorkflowLimitsPatch): RateLimits {
  return {
    perMinute: patch.rateLimitPerMinute === undefined ? current.perMinute : patch.rateLimitPerMinute,
    perHour: patch.rateLimitPerHour === undefined ? current.perHour : patch.rateLimitPerHour,
    perDay: patch.rateLimitPerDay === undefined ? current.perDay : patch.rateLimitPerDay,
  };
}

/** Applies a limits patch to an active workflow of the organization (404 otherwise). */
export async function updateWorkflowLimits(
  repos: Repositories,
  orgId: string,
  workflowId: string,
  patch: WorkflowLimitsPatch,
  at: string,
): Promise<{ workflow: Workflow; previous: RateLimits }> {
  const current = await repos.workflows.findInOrg(orgId, workflowId);
  if (!current || current.removedAt !== null) throw notFound('Workflow');
  const updated = await repos.workflows.setRateLimits(orgId, workflowId, mergeRateLimits(current.rateLimit, patch), at);
  if (!updated) throw notFound('Workflow');
  return { workflow: updated, previous: current.rateLimit };
}
