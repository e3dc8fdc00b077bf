import type { Workflow, WorkflowParam } from '../api/types';
import { limitWords } from './grant-words';

/** How the pages say a workflow's parameters and rate limits. */

/** `who: string, default "world", matching ^[a-z]+$` */
export function describeParam(p: WorkflowParam): string {
  const parts = [`${p.name}: ${p.type}`];
  if (p.required) parts.push('required');
  if (p.default !== undefined) parts.push(`default ${JSON.stringify(p.default)}`);
  if (p.options) parts.push(`one of ${p.options.map((o) => JSON.stringify(o)).join(', ')}`);
  if (p.min !== undefined) parts.push(`min ${p.min}`);
  if (p.max !== undefined) parts.push(`max ${p.max}`);
  if (p.pattern) parts.push(`matching ${p.pattern}`);
  return parts.join(', ');
}

/** Whether any of the workflow's three rate limits is set. */
export const limited = (w: Workflow): boolean =>
  w.rateLimitPerMinute !== null || w.rateLimitPerHour !== null || w.rateLimitPerDay !== null;

/** A workflow's limits in the words of a token's: `10 a minute, 500 a day`, or `no limit`. */
export const workflowLimitWords = (w: Workflow): string =>
  limitWords({ perMinute: w.rateLimitPerMinute, perHour: w.rateLimitPerHour, perDay: w.rateLimitPerDay });
