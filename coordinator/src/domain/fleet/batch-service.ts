import { performance } from 'node:perf_hooks';
import { isTerminalJobStatus } from '@drover/shared';
import { notFound } from '../../errors.js';
import { isoNow, type Clock } from '../../util/clock.js';
import { userAction, type AuditLog, type UserActor } from '../audit/audit-log.js';
import type { JobCancelService } from '../jobs/job-cancel.js';
import { CANCELLED_MESSAGE } from '../jobs/job-state.js';
import type { JobEvents } from '../jobs/job-events.js';
import type { BatchCounts, BatchListQuery, BatchStatus, BatchWithCounts } from '../model/batches.js';
import type { Job } from '../model/jobs.js';
import type { Repositories } from '../model/repositories.js';

/** A batch as the API shows it (docs/fleets.md, "Batches"). */
export interface BatchView extends BatchWithCounts {
  status: BatchStatus;
}

/** One job of a batch, as the batch's view and its sync answer show it: one row per agent. */
export interface BatchJobView {
  jobId: string;
  number: number;
  agentId: string | null;
  agentName: string | null;
  status: Job['status'];
  exitCode: number | null;
  errorMessage: string | null;
  output: Record<string, unknown>;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** Where a batch's progress is: its page in the dashboard (`GET /v1/orgs/:orgId/batches/:id` in the API). */
export const batchStatusUrl = (batchId: string): string => `/api/batches/${batchId}`;

const ENDED_STATUSES = ['success', 'failed', 'timed_out', 'cancelled', 'rejected'] as const;

/**
 * A batch's status from its jobs: `pending` while none has been taken by its agent (queued or
 * further; a job refused at once does not count),
 * `running` until every job ended; then `success` (all succeeded), `cancelled` (all cancelled),
 * `failed` (none succeeded) or `partial`.
 */
export function batchStatus(counts: BatchCounts, jobCount: number): BatchStatus {
  const ended = ENDED_STATUSES.reduce((sum, s) => sum + counts[s], 0);
  if (ended < jobCount) return ended - counts.rejected + counts.queued + counts.running === 0 ? 'pending' : 'running';
  if (counts.success === jobCount) return 'success';
  if (counts.cancelled === jobCount) return 'cancelled';
  return counts.success === 0 ? 'failed' : 'partial';
}

export const viewBatch = (batch: BatchWithCounts): BatchView => ({
  ...batch,
  status: batchStatus(batch.counts, batch.jobCount),
});

export interface BatchServiceDeps {
  repos: Pick<Repositories, 'batches' | 'agents' | 'orgs'>;
  jobEvents: JobEvents;
  cancels: JobCancelService;
  audit: AuditLog;
  clock: Clock;
  logger: { error(obj: object, msg: string): void };
}

/**
 * Batches after their call (docs/fleets.md): views, cancel, and their course: when one of a
 * batch's jobs ends, held jobs are handed out while the trigger's maxParallel allows, and the
 * batch is marked ended once none of its jobs is open. Both are decided in the database (one
 * decision whichever coordinator tries), after the job's end here, and by a sweep that catches
 * up after a coordinator stopped between a job's end and its batch's turn.
 */
export class BatchService {
  constructor(private readonly deps: BatchServiceDeps) {}

  async list(actor: UserActor, query: BatchListQuery): Promise<BatchView[]> {
    return (await this.deps.repos.batches.listByOrg(actor.orgId, query)).map(viewBatch);
  }

  async get(actor: UserActor, batchId: string): Promise<BatchView & { jobs: BatchJobView[] }> {
    const batch = await this.deps.repos.batches.findInOrg(actor.orgId, batchId);
    if (!batch) throw notFound('Batch');
    return { ...viewBatch(batch), jobs: await this.jobViews(batch.orgId, batch.id) };
  }

  /** The batch's jobs, one row per agent, with the agents' names. */
  async jobViews(orgId: string, batchId: string): Promise<BatchJobView[]> {
    const jobs = await this.deps.repos.batches.jobs(batchId);
    // The batch's own agents only (a batch may select a few of a large fleet; its page polls this).
    const ids = [...new Set(jobs.flatMap((job) => (job.agentId === null ? [] : [job.agentId])))];
    const names = new Map((await this.deps.repos.agents.listByIds(orgId, ids)).map((a) => [a.id, a.name]));
    return jobs.map((job) => ({
      jobId: job.id,
      number: job.number,
      agentId: job.agentId,
      agentName: job.agentId === null ? null : (names.get(job.agentId) ?? null),
      status: job.status,
      exitCode: job.exitCode,
      errorMessage: job.errorMessage,
      output: job.output ?? {},
      createdAt: job.createdAt,
      startedAt: job.startedAt,
      finishedAt: job.finishedAt,
    }));
  }

  /** Cancels every unfinished job of the batch (audited once); answers the batch as it is then. */
  async cancel(actor: UserActor, batchId: string): Promise<BatchView & { jobs: BatchJobView[] }> {
    const { repos, cancels, audit } = this.deps;
    const batch = await repos.batches.findInOrg(actor.orgId, batchId);
    if (!batch) throw notFound('Batch');
    // Those not started first, in one write (held ones too, so none is handed out meanwhile);
    // then the running ones, each stopped by its agent.
    const waiting = await repos.batches.cancelNotStarted(batch.id, isoNow(this.deps.clock), CANCELLED_MESSAGE);
    for (const job of waiting) {
      if (job.agentId !== null) this.deps.jobEvents.cancelRequested(job.agentId, job.id);
    }
    for (const job of waiting) this.deps.jobEvents.jobFinished(job.id);
    let cancelled = waiting.length;
    const running = (await repos.batches.jobs(batch.id)).filter((j) => !isTerminalJobStatus(j.status));
    for (const job of running) {
      const result = await cancels.cancelJob(job);
      if (result.outcome === 'applied') cancelled += 1;
    }
    if (waiting.length + running.length > 0) {
      await audit.record(
        userAction(actor, 'batch.cancel', 'batch', batch.id, {
          batchNumber: batch.number,
          workflowName: batch.workflowName,
          jobs: cancelled,
        }),
      );
    }
    await this.advance(batch.id);
    return this.get(actor, batch.id);
  }

  /**
   * One of the batch's jobs ended (or the sweep): hand out the held jobs its maxParallel now
   * allows, and mark it ended when none is open.
   */
  async advance(batchId: string): Promise<void> {
    const { repos, jobEvents, clock } = this.deps;
    for (const job of await repos.batches.release(batchId)) {
      if (job.agentId !== null) jobEvents.jobCreated(job.agentId, job.id);
    }
    await repos.batches.settle(batchId, isoNow(clock));
  }

  /** The batches not marked ended: their course caught up (a pass of the job sweeper). */
  async sweep(): Promise<void> {
    for (const id of await this.deps.repos.batches.listUnsettled(100)) {
      try {
        await this.advance(id);
      } catch (error) {
        this.deps.logger.error({ err: error, batchId: id }, 'batch sweep failed');
      }
    }
  }

  /**
   * Every job, once it ended here, moves its batch on. Returns the unsubscribe function.
   * `batchOf` reads the job's batch (null for a job of none).
   */
  follow(batchOf: (jobId: string) => Promise<string | null>): () => void {
    return this.deps.jobEvents.onJobFinished((jobId) => {
      void batchOf(jobId).then(
        (batchId) => {
          if (batchId !== null) this.advanceSoon(batchId);
        },
        (error: unknown) => this.deps.logger.error({ err: error, jobId }, 'could not read the batch of a job'),
      );
    });
  }

  /** Batches moving on now, and whether one of their jobs ended meanwhile (then once more after). */
  private readonly advancing = new Map<string, { again: boolean }>();

  /**
   * `advance`, one at a time per batch: the ends of many of its jobs at once (a cancel, a wave of
   * results) make one pass, and one more if jobs ended during it.
   */
  private advanceSoon(batchId: string): void {
    const running = this.advancing.get(batchId);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false };
    this.advancing.set(batchId, state);
    const pass = (): Promise<void> =>
      this.advance(batchId).then(() => {
        if (!state.again) return;
        state.again = false;
        return pass();
      });
    void pass()
      .catch((error: unknown) => this.deps.logger.error({ err: error, batchId }, 'batch advance failed'))
      .finally(() => this.advancing.delete(batchId));
  }

  /**
   * The batch's jobs once every one ended, or as they are after `timeoutMs` (or when `signal`
   * aborts): a sync call's answer. Wakes at each end of one of them, here or on another
   * coordinator, and after a gap in those events, to read which are still open.
   */
  async waitForEnd(
    orgId: string,
    batchId: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<{ jobs: BatchJobView[]; ended: boolean }> {
    const deadline = performance.now() + timeoutMs;
    // The jobs still open at the last read: the end of one of them wakes the wait (null: any).
    let open: Set<string> | null = null;
    for (;;) {
      let wake = () => {};
      const woken = new Promise<void>((resolve) => (wake = resolve));
      const offFinished = this.deps.jobEvents.onJobFinished((jobId) => {
        if (open === null || open.has(jobId)) wake();
      }, 'anywhere');
      const offGap = this.deps.jobEvents.onGap(() => wake());
      try {
        // Which jobs are still open: an index seek over those alone. The jobs with their agents'
        // names are read once, for the answer: read at each end, a batch of thousands read
        // every job and agent of it as many times over, the coordinator busy with little else.
        open = new Set(await this.deps.repos.batches.openJobIds(batchId));
        const left = deadline - performance.now();
        if (open.size === 0 || left <= 0 || signal?.aborted) {
          const jobs = await this.jobViews(orgId, batchId);
          return { jobs, ended: jobs.every((j) => isTerminalJobStatus(j.status)) };
        }
        let timer: NodeJS.Timeout | undefined;
        const onAbort = () => wake();
        signal?.addEventListener('abort', onAbort, { once: true });
        await Promise.race([woken, new Promise<void>((resolve) => (timer = setTimeout(resolve, left)))]);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      } finally {
        offFinished();
        offGap();
      }
    }
  }
}
