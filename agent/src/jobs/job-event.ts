import { WorkflowDefinition, type JobAssignment } from '@drover/shared';
import { isObject } from '../util/is-object.js';

/**
 * The longest job `timeoutMs` taken from the coordinator: the wire's limit of a workflow's
 * `timeout` (24 hours), which is where the coordinator takes a job's from.
 */
export const MAX_JOB_TIMEOUT_MS: number = WorkflowDefinition.properties.timeout.maximum;

/**
 * Whether the data of a `job` event is a JobAssignment as the agent uses one: a job id, a
 * workflow name, params, a status and a kind (`trigger`, `update`, or none: a trigger job) it
 * knows. The journal holds each job's assignment and checks it the same way when it reads it
 * back. Its optional fields (`timeoutMs`, `ref`, `debug`) are checked by saneJobAssignment.
 */
export function isJobAssignment(data: unknown): data is JobAssignment {
  if (!isObject(data)) return false;
  return (
    typeof data.jobId === 'string' &&
    typeof data.workflowName === 'string' &&
    typeof data.params === 'object' &&
    data.params !== null &&
    (data.status === 'pending' || data.status === 'queued' || data.status === 'running') &&
    (data.kind === undefined || data.kind === 'trigger' || data.kind === 'update')
  );
}

/**
 * The assignment with its optional fields as the agent can use them, and what was set aside: a
 * `timeoutMs` that is not a whole number of milliseconds from 1 to MAX_JOB_TIMEOUT_MS (the
 * workflow's own timeout applies then, the one the coordinator took it from), a `ref` that is not
 * a text (none then), a `debug` that is not a boolean (off then). The job runs all the same:
 * ignoring its event would leave it pending on the coordinator, sent again at every connect.
 */
export function saneJobAssignment<T extends JobAssignment>(assignment: T): { assignment: T; problems: string[] } {
  const problems: string[] = [];
  const fields: Partial<Pick<JobAssignment, 'timeoutMs' | 'ref' | 'debug'>> = {};
  const { timeoutMs, ref, debug } = assignment as { timeoutMs?: unknown; ref?: unknown; debug?: unknown };
  if (timeoutMs !== undefined && timeoutMs !== null && !isJobTimeout(timeoutMs)) {
    problems.push(
      `\`timeoutMs\` ${shown(timeoutMs)} is not a whole number of milliseconds from 1 to ${MAX_JOB_TIMEOUT_MS}: the workflow's timeout (or the agent's default) applies`,
    );
    fields.timeoutMs = null;
  }
  if (ref !== undefined && ref !== null && typeof ref !== 'string') {
    problems.push(`\`ref\` ${shown(ref)} is not a text: the job runs without one`);
    fields.ref = null;
  }
  if (debug !== undefined && typeof debug !== 'boolean') {
    problems.push(`\`debug\` ${shown(debug)} is not true or false: the job runs without it`);
    fields.debug = false;
  }
  return { assignment: problems.length ? { ...assignment, ...fields } : assignment, problems };
}

const isJobTimeout = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 && value <= MAX_JOB_TIMEOUT_MS;

/** A value of an event, short, for a log line. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
