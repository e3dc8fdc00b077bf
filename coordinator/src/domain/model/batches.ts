import type { JobStatus } from '@drover/shared';
import type { Job, JobSource, NewJob } from './jobs.js';
import type { LimitRefusal, RateLimits } from './rate-limits.js';
import type { CronOverlapPolicy } from './triggers.js';

/** A batch's status: `pending` until one of its jobs is handed out, `running` until every job ended, then its outcome. */
export const BATCH_STATUSES = ['pending', 'running', 'success', 'failed', 'partial', 'cancelled'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** How many of a batch's jobs are in each status. */
export type BatchCounts = Record<JobStatus, number>;

/** The jobs of one call of a `fanout: all` trigger, one per agent it selected (docs/fleets.md). */
export interface Batch {
  id: string;
  orgId: string;
  /** The organization's number of the batch: 1, 2, 3, ... in creation order. */
  number: number;
  triggerId: string;
  workflowName: string;
  /** The trigger's selector when it was called. */
  selector: string;
  maxParallel: number | null;
  source: Exclude<JobSource, 'ota'>;
  apiTokenId: string | null;
  userId: string | null;
  jobCount: number;
  createdAt: string;
  /** When its last job ended; null while one is open. */
  endedAt: string | null;
}

export interface BatchWithCounts extends Batch {
  counts: BatchCounts;
}

/** One job of a batch to admit: its agent's, `pending` unless refused before any limit. */
export interface BatchJobRequest {
  job: Omit<NewJob, 'status' | 'errorMessage' | 'batchId' | 'held'> & { triggerId: string };
  /** Set when the job is refused by a rule (the agent lacks the workflow, params it refuses): stored `rejected`. */
  rejection: string | null;
  /** The limits of the agent's workflow (counted once for this job). */
  workflowLimits: RateLimits;
}

export interface BatchAdmissionRequest {
  batch: Omit<Batch, 'number' | 'jobCount' | 'endedAt'>;
  jobs: BatchJobRequest[];
  now: number;
  idempotency: { key: string; requestHash: string; ttlMs: number } | null;
  /** The calling token's limits, counted once for the whole batch. */
  token: { id: string; limits: RateLimits } | null;
  /**
   * A schedule's occurrence (docs/schedules.md), claimed in the same write: claimed before makes
   * nothing; with `overlap: 'skip'`, an open scheduled batch of the trigger records it skipped.
   */
  occurrence?: { scheduledAt: string; overlap: CronOverlapPolicy } | undefined;
}

export type BatchAdmissionOutcome =
  /** The batch and its jobs; `released`: the jobs handed out at once (not held by maxParallel). */
  | { outcome: 'admitted'; batch: Batch; jobs: Job[] }
  /** The key was used before with the same body: that call's batch. */
  | { outcome: 'repeated'; batchId: string }
  /** The key was used before with a different body, or (`usedFor: 'job'`) for one job when the trigger ran on one agent. */
  | { outcome: 'idempotency_conflict'; usedFor?: 'job' }
  /** The token's limit refused the call: nothing was stored. */
  | { outcome: 'refused'; refusal: LimitRefusal; message: string }
  | { outcome: 'claimed_before' }
  | { outcome: 'skipped_overlap' };

export interface BatchListQuery {
  limit: number;
  /** Only the batches of this trigger (none when it is no trigger of the organization). */
  triggerId?: string | undefined;
  /** Batches numbered below this one (the previous page's last `number`). */
  beforeNumber?: number | undefined;
}

export interface BatchRepository {
  /**
   * A batch call in one transaction: idempotency, the token's limit (once), each job's workflow
   * limit (a refused job is stored `rejected`), the batch, its jobs (those past `maxParallel`
   * held), the counters and the key.
   */
  admit(request: BatchAdmissionRequest): Promise<BatchAdmissionOutcome>;
  findInOrg(orgId: string, id: string): Promise<BatchWithCounts | null>;
  findById(id: string): Promise<BatchWithCounts | null>;
  /** Newest first; only one trigger's with `triggerId`. */
  listByOrg(orgId: string, query: BatchListQuery): Promise<BatchWithCounts[]>;
  /** The batch's jobs, in creation order (by agent). */
  jobs(batchId: string): Promise<Job[]>;
  /** The ids of the batch's jobs not ended yet (pending, held or not, queued, running): an index seek. */
  openJobIds(batchId: string): Promise<string[]>;
  /**
   * Hands out held jobs while fewer than the batch's maxParallel are handed out and open, under
   * the batch's lock (one decision across coordinators); gives the jobs released.
   */
  release(batchId: string): Promise<Job[]>;
  /**
   * Marks the batch ended when none of its jobs is open any more (once: the first caller to see it
   * does; its chat notification is written in the same transaction); gives it then, else null.
   */
  settle(batchId: string, at: string): Promise<BatchWithCounts | null>;
  /**
   * Cancels, in one write, every job of the batch not started yet (pending, held or not, and
   * queued): `cancelled` at once, as a single job's cancel before it starts. Gives them (their
   * agents are told). Running jobs are cancelled one by one, as any job's (their agents stop them).
   */
  cancelNotStarted(batchId: string, at: string, message: string): Promise<{ id: string; agentId: string | null }[]>;
  /** Batches with open held jobs or not yet marked ended (the sweep after a coordinator stopped mid-way). */
  listUnsettled(limit: number): Promise<string[]>;
}
