import type { JobStatus } from '@drover/shared';
import type { NewJob } from './jobs.js';
import type { CronOverlapPolicy } from './triggers.js';
import type { LimitRefusal, RateLimits } from './rate-limits.js';

/** A trigger call that passed validation, to admit as a job (or refuse) in one transaction. */
export interface AdmissionRequest {
  /** The job to create; its status (`pending`, or `rejected` when refused) is decided here. */
  job: Omit<NewJob, 'status' | 'errorMessage'> & { triggerId: string };
  /** Unix ms of the call: the rate windows and the idempotency expiry are computed from it. */
  now: number;
  /**
   * Key and body hash, when the call carries an Idempotency-Key; scoped to (trigger, workflow name).
   * `keepRefused`: the key is stored for a call a limit refused too, naming its rejected job. A
   * chat run's key is the provider's id of one message (docs/chat.md), which may arrive again (a
   * Gateway session resumed, Slack's retry of an event) or on every coordinator's Gateway session
   * at once: it must be refused once, not once per delivery, nor admitted later when the window
   * has passed. An Idempotency-Key of the public API is not kept (docs/trigger-runs.md).
   */
  idempotency: { key: string; requestHash: string; ttlMs: number; keepRefused?: boolean } | null;
  /** The calling token's job limits (null: not called with a token). */
  token: { id: string; limits: RateLimits } | null;
  /** The workflow's limits; bypassed (but still counted) when `job.forced`. Windows are counted only while a limit is set. */
  workflowLimits: RateLimits;
  /**
   * A scheduled run: the occurrence of the trigger's schedule it is the job of, claimed in the same
   * transaction (docs/schedules.md). An occurrence claimed before makes nothing; with `overlap:
   * 'skip'`, an occurrence whose previous scheduled job is still open is recorded as skipped.
   */
  occurrence?: { scheduledAt: string; overlap: CronOverlapPolicy } | undefined;
  /**
   * A run of a pool (`fanout: one`, docs/fleets.md): the job goes to the least busy of these
   * agents with room in its queue, chosen in the write (`choosePoolAgent`), or, with none, waits
   * in the pool without an agent (`job.agentId` null) for the first matching agent to take it.
   */
  pool?: { candidates: PoolCandidate[] } | undefined;
  /**
   * Set when the run is refused by a rule before any limit (a scheduled run whose params no
   * longer validate, ...): the job is stored `rejected` with this message and nothing is counted.
   */
  rejection?: string | undefined;
}

/**
 * An agent a pool's job may go to at once: connected, reporting the workflow in a version that
 * takes the call's params. The job it gets carries its version's params (the defaults of that
 * version applied) and timeout.
 */
export interface PoolCandidate {
  agentId: string;
  workflowId: string;
  /** The queue capacity its stream announced. */
  capacity: number;
  /** The call's params as its version of the workflow resolves them. */
  params: Record<string, unknown>;
  /** Its version's timeout. */
  timeoutMs: number | null;
}

/** A candidate with the jobs it holds now (open, handed out). */
export interface PoolLoad extends PoolCandidate {
  open: number;
}

/** Which candidate a pool's job goes to (the least busy with room), or null: it waits in the pool. */
export type ChoosePoolAgent = (loads: readonly PoolLoad[]) => PoolCandidate | null;

export type AdmissionOutcome =
  /** A new `pending` job; `agentId`: its agent (null: it waits in a pool). */
  | { outcome: 'admitted'; jobId: string; agentId: string | null }
  /** The key was used before with the same body: that call's job. */
  | { outcome: 'repeated'; jobId: string }
  /**
   * The key was used before with a different body, or (`usedFor: 'batch'`) for a batch of the
   * trigger when it ran on a selector; nothing was written.
   */
  | { outcome: 'idempotency_conflict'; usedFor?: 'batch' }
  /** Refused by a limit: a `rejected` job was stored (and a rate_limit_blocks row for a workflow limit). */
  | { outcome: 'refused'; jobId: string; scope: 'token' | 'workflow'; refusal: LimitRefusal; message: string }
  /** Refused by a rule (`rejection`): a `rejected` job was stored. */
  | { outcome: 'rejected'; jobId: string }
  /** The occurrence had been claimed before (by this or another scheduler): nothing was written. */
  | { outcome: 'claimed_before' }
  /** The occurrence was recorded as skipped because the previous scheduled job is still open. */
  | { outcome: 'skipped_overlap' };

/** An admission that reached the limits: its workflow is known. */
export type LimitedAdmission = AdmissionRequest & { job: { workflowId: string } };

/** What a sync trigger run answers with. */
export interface JobResult {
  status: JobStatus;
  exitCode: number | null;
  errorMessage: string | null;
  output: Record<string, unknown> | null;
}

export interface TriggerRunRepository {
  /**
   * The admission of a trigger call, atomic and serialized with every other admission (group
   * commit, see db/writer/): idempotency lookup, token limit, workflow limit (unless
   * forced), the job, the window counters (dispatched calls only), the idempotency key (dispatched
   * calls only, so a call refused by a limit can be retried with the same key, unless
   * `keepRefused`) and the block row.
   * Resolves once committed.
   */
  admit(request: AdmissionRequest): Promise<AdmissionOutcome>;
  /** The status and result of a job, or null when it does not exist. */
  jobResult(jobId: string): Promise<JobResult | null>;
}
