import { looksLikeFileRef, type DeployAssignment } from '@drover/shared';
import { isObject } from '../util/is-object.js';

export type ParsedDeployEvent =
  { ok: true; assignment: DeployAssignment; startWithinMs: number } | { ok: false; problem: string };

/** The longest start spread taken from an event (a larger one is cut to it): 15 minutes. */
export const MAX_START_WITHIN_MS = 900_000;

const STATUSES = ['pending', 'queued', 'running'] as const;

/**
 * The data of a `deploy` event (or of a `job` event of kind `update`) as a DeployAssignment, or
 * why it is not one. Only the shape is checked here: the release it names is checked against the
 * signed manifest when the job runs. `startWithinMs` (the spread of a large publish's starts) is 0
 * when the event has none or an unusable one, and at most MAX_START_WITHIN_MS.
 */
export function parseDeployEvent(data: unknown): ParsedDeployEvent {
  if (!isObject(data)) return { ok: false, problem: 'its data is not an object' };
  const { jobId, applicationId, workflowName, params, status, timeoutMs } = data;
  if (typeof jobId !== 'string' || jobId === '') return { ok: false, problem: 'it has no job id' };
  if (data.kind !== undefined && data.kind !== 'update') return { ok: false, problem: 'its kind is not `update`' };
  if (typeof applicationId !== 'string' || applicationId === '')
    return { ok: false, problem: 'it has no application id' };
  if (typeof workflowName !== 'string' || workflowName === '')
    return { ok: false, problem: 'it names no update workflow' };
  if (!STATUSES.includes(status as (typeof STATUSES)[number])) return { ok: false, problem: 'its status is unknown' };
  if (timeoutMs !== undefined && timeoutMs !== null && !(Number.isSafeInteger(timeoutMs) && (timeoutMs as number) > 0))
    return { ok: false, problem: '`timeoutMs` is not a positive integer' };
  if (!isObject(params)) return { ok: false, problem: 'it has no params' };
  const p = params;
  if (!looksLikeFileRef(p.artifact) || typeof p.artifact.id !== 'string')
    return { ok: false, problem: '`params.artifact` is not a FileRef' };
  for (const key of ['release_id', 'version', 'channel', 'checksum_sha256'] as const) {
    if (typeof p[key] !== 'string') return { ok: false, problem: `\`params.${key}\` is not a string` };
  }
  if (!Number.isSafeInteger(p.sequence)) return { ok: false, problem: '`params.sequence` is not an integer' };
  if (typeof p.forced !== 'boolean') return { ok: false, problem: '`params.forced` is not a boolean' };
  const spread = data.startWithinMs;
  return {
    ok: true,
    startWithinMs:
      typeof spread === 'number' && Number.isSafeInteger(spread) && spread > 0
        ? Math.min(spread, MAX_START_WITHIN_MS)
        : 0,
    assignment: {
      jobId,
      kind: 'update',
      applicationId,
      workflowName,
      params: params as unknown as DeployAssignment['params'],
      ref: typeof data.ref === 'string' ? data.ref : null,
      debug: data.debug === true,
      timeoutMs: (timeoutMs as number | null | undefined) ?? null,
      status: status as DeployAssignment['status'],
      createdAt: typeof data.createdAt === 'string' ? data.createdAt : new Date().toISOString(),
    },
  };
}
