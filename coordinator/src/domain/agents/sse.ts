import type { JobAssignment } from '@drover/shared';
import type { Job, OpenJobStatus } from '../model/jobs.js';

/**
 * One server-sent event (text/event-stream): `event`, `id` and one `data` line. `data` is JSON,
 * which never contains a raw line break, so one `data:` line always suffices.
 */
export function sseEvent(event: string, id: string, data: unknown): string {
  return `event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A comment line: ignored by clients, it flushes the headers at once. */
export const SSE_OPENING = ': drover stream\n\n';

/** The data of a `job` event for an open job (docs/agent-protocol.md §6). */
export function toAssignment(job: Job, status: OpenJobStatus): JobAssignment {
  return {
    jobId: job.id,
    kind: job.kind,
    workflowName: job.workflowName,
    params: job.params,
    ref: job.ref,
    debug: job.debug,
    timeoutMs: job.timeoutMs,
    status,
    createdAt: job.createdAt,
  };
}
