import { describeOutcome, statusPageUrl } from '../jobs/format-job.js';
import { formatFields, formatTable } from '../output/table.js';
import { ago, elapsed, shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import {
  batchPath,
  describeCounts,
  formatCounts,
  type Batch,
  type BatchDetail,
  type BatchJob,
  type BatchJobResult,
} from './batch.js';
import { shortId } from '@drover/shared';

/**
 * How each job's agent is named in a table: its name, with the end of its id when two jobs'
 * agents share the name; its id when the agent has no name any more; `-` for none.
 */
function agentNames(jobs: readonly Pick<BatchJobResult, 'agentId' | 'agentName'>[]): string[] {
  const uses = new Map<string, number>();
  for (const job of jobs) if (job.agentName !== null) uses.set(job.agentName, (uses.get(job.agentName) ?? 0) + 1);
  return jobs.map(({ agentId, agentName }) => {
    if (agentName === null) return agentId ?? '-';
    return uses.get(agentName)! > 1 && agentId !== null ? `${agentName} (${shortId(agentId)})` : agentName;
  });
}

const exitCell = (exitCode: number | null) => (exitCode === null ? null : String(exitCode));

/** The jobs of a batch's run, one row per agent: `AGENT STATUS EXIT ERROR`. */
export function batchResultTable(jobs: readonly BatchJobResult[]): string {
  const agents = agentNames(jobs);
  const rows = jobs.map((j, i) => [agents[i], j.status, exitCell(j.exitCode), j.errorMessage]);
  return formatTable(['AGENT', 'STATUS', 'EXIT', 'ERROR'], rows);
}

/** The jobs of a batch's detail, one row per agent, with each job's id and how long it took. */
export function batchJobsTable(jobs: readonly BatchJob[]): string {
  const agents = agentNames(jobs);
  const rows = jobs.map((j, i) => [
    agents[i],
    j.jobId,
    j.status,
    exitCell(j.exitCode),
    elapsed(j.startedAt, j.finishedAt),
    j.errorMessage,
  ]);
  return formatTable(['AGENT', 'JOB', 'STATUS', 'EXIT', 'TOOK', 'ERROR'], rows);
}

/** A batch's status and what its jobs are: `partial (2 success, 1 rejected)`. */
export const batchState = (status: Batch['status'], jobs: readonly { status: BatchJob['status'] }[]): string =>
  `${status} (${describeCounts(jobs)})`;

/**
 * What a wait for a batch prints (to stderr) as its jobs are seen to end, one line each:
 * `gw-a (job #12) failed (exit code 1) in 0.3s: ...`, the agent named as the tables name it.
 */
export const printJobEnds =
  (rt: Runtime) =>
  (ended: readonly BatchJob[], batch: BatchDetail): void => {
    const names = agentNames(batch.jobs);
    const agents = new Map(batch.jobs.map((j, i) => [j.jobId, names[i]!]));
    for (const job of ended) rt.err(`${agents.get(job.jobId)} (job #${job.number}) ${describeOutcome(job)}\n`);
  };

/** `drover batch show`: the batch's fields, then one row per agent. */
export function describeBatch(batch: BatchDetail, origin: string): string {
  const fields = formatFields([
    ['Batch', `${batch.id} (#${batch.number})`],
    ['Status', batchState(batch.status, batch.jobs)],
    ['Workflow', batch.workflowName],
    ['Selector', batch.selector],
    ['Max parallel', batch.maxParallel === null ? 'all at once' : String(batch.maxParallel)],
    ['Trigger', batch.triggerId],
    ['Source', batch.source],
    ['Created', shortTime(batch.createdAt)],
    ['Ended', shortTime(batch.endedAt)],
    ['Took', elapsed(batch.createdAt, batch.endedAt)],
    ['Page', statusPageUrl(origin, `/api${batchPath(batch.id)}`)],
  ]);
  return `${fields}\n${batchJobsTable(batch.jobs)}`;
}

/** `drover batch list`: one row per batch. */
export function batchListTable(batches: readonly Batch[]): string {
  const rows = batches.map((b) => [
    b.id,
    `#${b.number}`,
    b.status,
    b.workflowName,
    b.selector,
    `${b.jobCount}: ${formatCounts(b.counts)}`,
    ago(b.createdAt),
    elapsed(b.createdAt, b.endedAt),
  ]);
  return formatTable(['ID', 'NUMBER', 'STATUS', 'WORKFLOW', 'SELECTOR', 'JOBS', 'CREATED', 'TOOK'], rows);
}
