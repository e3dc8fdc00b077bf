import type { JobAssignment } from '@drover/shared';
import { isObject } from '../util/is-object.js';

/**
 * Whether the data of a `job` event is a JobAssignment as the agent uses one: a job id, a
 * workflow name, params and a status it knows. The journal holds each job's assignment and checks
 * it the same way when it reads it back.
 */
export function isJobAssignment(data: unknown): data is JobAssignment {
  if (!isObject(data)) return false;
  return (
    typeof data.jobId === 'string' &&
    typeof data.workflowName === 'string' &&
    typeof data.params === 'object' &&
    data.params !== null &&
    (data.status === 'pending' || data.status === 'queued' || data.status === 'running')
  );
}
