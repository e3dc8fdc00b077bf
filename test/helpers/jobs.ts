import { randomUUID } from 'node:crypto';
import type { NewJob } from '../../coordinator/src/domain/model/jobs.js';
import type { TestCoordinator } from './coordinator.js';

/**
 * Creates a job directly in the coordinator (the way the trigger-run route does: the database's
 * INSERT of a job, then `jobEvents.jobCreated` after the commit) so that stream and job tests need
 * no trigger. `notify: false` skips the event (a job created while no coordinator was listening).
 */
export async function createTestJob(
  t: TestCoordinator,
  agent: { agentId: string; orgId: string },
  fields: Partial<NewJob> = {},
  options: { notify?: boolean } = {},
): Promise<NewJob> {
  const job: NewJob = {
    id: randomUUID(),
    orgId: agent.orgId,
    kind: 'trigger',
    source: fields.kind === 'update' ? 'ota' : 'webhook',
    triggerId: randomUUID(),
    agentId: agent.agentId,
    workflowId: null,
    workflowName: 'deploy',
    status: 'pending',
    ref: 'main',
    debug: false,
    params: { env: 'staging' },
    errorMessage: null,
    forced: false,
    forceReason: null,
    apiTokenId: null,
    userId: null,
    timeoutMs: 60_000,
    createdAt: new Date().toISOString(),
    ...fields,
  };
  await t.sql.insertJob(job);
  if (options.notify !== false && job.status === 'pending' && job.agentId !== null) {
    t.coordinator.ctx.jobEvents.jobCreated(job.agentId, job.id);
  }
  return job;
}

/** A finish body with defaults. */
export function finishBody(fields: Record<string, unknown> = {}) {
  return { status: 'success', exitCode: 0, errorMessage: null, output: {}, ...fields };
}
