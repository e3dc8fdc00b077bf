import { storableText } from './storable-text.js';
import type { JobStatus, RejectJobRequest } from '@drover/shared';
import {
  isOpenJobStatus,
  OPEN_JOB_STATUSES,
  type FinishReport,
  type Job,
  type JobMove,
  type JobMovePlan,
} from '../model/jobs.js';

/**
 * The job state machine (docs/jobs.md). Pure rules: which move applies from which status, which
 * repeat is harmless, and what is impossible. `planJobMove` turns a report into the write; the
 * repository runs it inside the group commit and makes the write a conditional UPDATE
 * (`WHERE status IN (...)`), so a terminal status is written once.
 *
 *   pending ──accept──▶ queued ──start──▶ running ──finish──▶ success | failed | timed_out | cancelled
 *      │  └─────────────start──────────────▲                      ▲
 *      ├──reject──▶ rejected               └─ finish from pending or queued too (a job that never ran)
 *      └── (a refused trigger call is created `rejected` directly)
 *   queued | running ──deadline sweep──▶ failed
 *   pending | queued | running ──agent revoked──▶ failed
 *   pending | queued ──cancel (a user)──▶ cancelled;  running ──cancel──▶ running, cancel requested:
 *     the agent stops it and finishes it, or the deadline sweep ends it `cancelled`
 */

/** The moves an agent reports. */
export type AgentTransition = 'accept' | 'reject' | 'start' | 'finish';

/** `apply`: make the move; `unchanged`: already made, answer 200 as is; `conflict`: 409. */
export type Decision = 'apply' | 'unchanged' | 'conflict';

interface Rule {
  /** Statuses the move applies from. */
  from: readonly JobStatus[];
  /** Statuses in which the move counts as already made (a repeat is a harmless 200). */
  already: readonly JobStatus[];
}

/** `finish` is decided by `decideFinish` (a repeat must carry the same result). */
export const TRANSITION_RULES: Readonly<Record<Exclude<AgentTransition, 'finish'>, Rule>> = Object.freeze({
  accept: { from: ['pending'], already: ['queued', 'running'] },
  reject: { from: ['pending'], already: ['rejected'] },
  start: { from: ['pending', 'queued'], already: ['running'] },
});

/** The statuses `finish` applies from: any open one (a job may fail before it starts). */
export const FINISH_FROM: readonly JobStatus[] = OPEN_JOB_STATUSES;

export function decide(transition: Exclude<AgentTransition, 'finish'>, current: JobStatus): Decision {
  const rule = TRANSITION_RULES[transition];
  if (rule.from.includes(current)) return 'apply';
  if (rule.already.includes(current)) return 'unchanged';
  return 'conflict';
}

/**
 * What an agent's report, or a user's cancel, does to the job as stored: the decision and, when it
 * applies, the new status with its instants (the deadline of a queued or started job, the finish
 * instant), and whether the report confirms a cancel.
 */
export function planJobMove(job: Job, m: JobMove): JobMovePlan {
  if (m.move === 'cancel') return planCancel(job, m.at, m.confirmBy);
  const plan = planReport(job, m);
  return confirmsCancel(job, plan) ? { ...plan, confirmsCancel: true } : plan;
}

/** An agent's report, decided on the job as stored. */
function planReport(job: Job, m: Exclude<JobMove, { move: 'cancel' }>): JobMovePlan {
  // A job a user cancelled before it ran: the agent must not run it (accept and start are refused),
  // and whatever else it reports about it (its refusal, a result) is taken as a harmless repeat.
  if (cancelledByUser(job) && (m.move === 'reject' || m.move === 'finish')) return { decision: 'unchanged' };
  switch (m.move) {
    case 'accept':
    case 'start': {
      const decision = decide(m.move, job.status);
      if (decision !== 'apply') return { decision };
      const status = m.move === 'accept' ? 'queued' : 'running';
      return { decision, change: { status, at: m.at, deadlineAt: deadlineAt(m.at, job.timeoutMs, m.deadlineGraceMs) } };
    }
    case 'reject': {
      const decision = decide('reject', job.status);
      if (decision !== 'apply') return { decision };
      return { decision, change: { status: 'rejected', at: m.at, errorMessage: m.errorMessage } };
    }
    case 'finish': {
      const decision = decideFinish(job, m.report);
      if (decision !== 'apply') return { decision };
      const { status, exitCode, errorMessage, output } = m.report;
      const finishedAt = finishInstant(m.report.finishedAt, job.startedAt ?? job.createdAt, m.at);
      return { decision, change: { status, exitCode, errorMessage, output, finishedAt } };
    }
  }
}

/**
 * A user's cancel (docs/jobs.md, "Cancellation"): a job that has not started is cancelled at once;
 * a running one gets the request recorded, and its deadline brought forward to `confirmBy` so that
 * it ends even if its agent never reports; a repeat is harmless; a finished job cannot be cancelled.
 */
export function planCancel(job: Job, at: string, confirmBy: string): JobMovePlan {
  switch (job.status) {
    case 'pending':
    case 'queued':
      return { decision: 'apply', change: { status: 'cancelled', cancel: 'now', errorMessage: CANCELLED_MESSAGE, at } };
    case 'running': {
      if (job.cancelRequestedAt !== null) return { decision: 'unchanged' };
      const deadline = job.deadlineAt !== null && job.deadlineAt < confirmBy ? job.deadlineAt : confirmBy;
      return { decision: 'apply', change: { status: 'running', cancel: 'requested', at, deadlineAt: deadline } };
    }
    default:
      return { decision: 'conflict' };
  }
}

/** A job a user cancelled before it ran (or whose unconfirmed cancel the sweep ended). */
export const cancelledByUser = (job: Pick<Job, 'status' | 'cancelRequestedAt'>): boolean =>
  job.status === 'cancelled' && job.cancelRequestedAt !== null;

/**
 * Whether an agent's report confirms a cancel: the job has a cancel request not yet confirmed,
 * and had ended before the report, or ends by it. Until then the agent gets the cancel again at
 * every stream connect.
 */
export function confirmsCancel(job: Job, plan: JobMovePlan): boolean {
  if (job.cancelRequestedAt === null || job.cancelAckedAt !== null) return false;
  if (!isOpenJobStatus(job.status)) return true;
  return plan.decision === 'apply' && !isOpenJobStatus(plan.change.status);
}

/** A finish's result, without the agent's finish instant. */
export type JobResult = Omit<FinishReport, 'finishedAt'>;

export interface RecordedResult {
  status: JobStatus;
  exitCode: number | null;
  errorMessage: string | null;
  output: Record<string, unknown> | null;
}

/**
 * A finish applies to an open job. On a finished job, the same result again (a resend from the
 * agent's outbox) is a harmless `unchanged`; any other result is a `conflict`: the first terminal
 * status stays.
 */
export function decideFinish(current: RecordedResult, result: JobResult): Decision {
  if (FINISH_FROM.includes(current.status)) return 'apply';
  return sameResult(current, result) ? 'unchanged' : 'conflict';
}

export function sameResult(current: RecordedResult, result: JobResult): boolean {
  return (
    current.status === result.status &&
    current.exitCode === result.exitCode &&
    current.errorMessage === result.errorMessage &&
    canonicalJson(current.output ?? {}) === canonicalJson(result.output)
  );
}

/** JSON with object keys sorted, so that equal values compare equal whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The instant past which a queued or running job without a result is failed: the moment it was
 * queued (or started) plus its timeout plus the grace. A job without a timeout has no deadline.
 */
export function deadlineAt(fromIso: string, timeoutMs: number | null, graceMs: number): string | null {
  if (timeoutMs === null) return null;
  return new Date(Date.parse(fromIso) + timeoutMs + graceMs).toISOString();
}

/**
 * When the job finished: the agent's reported instant when it lies between `since` (the job's
 * start, or its creation when it never started) and now: a result kept in the outbox while the
 * coordinator was unreachable; else now. The agent's clock is not trusted beyond that, and a job
 * never finishes before it started.
 */
export function finishInstant(reported: string | undefined, since: string, now: string): string {
  if (reported === undefined) return now;
  const ms = Date.parse(reported);
  if (!Number.isFinite(ms) || ms < Date.parse(since) || ms > Date.parse(now)) return now;
  return new Date(ms).toISOString();
}

export const DEADLINE_MESSAGE = "no result from the agent before the job's deadline";
export const REVOKED_MESSAGE = 'the agent was revoked before the job finished';
export const CANCELLED_MESSAGE = 'cancelled: a user cancelled the job before it started';
/** Shared with the dashboard, which tells such a job from one its agent stopped. */
export { CANCEL_UNCONFIRMED_MESSAGE } from '@drover/shared';

const REJECT_MESSAGES: Record<RejectJobRequest['reason'], string> = {
  queue_full: "the agent's job queue is full",
  unknown_workflow: 'the agent does not know this workflow',
  invalid_params: 'the agent refused the params',
  shutting_down: 'the agent is shutting down',
};

/** The error message of a job the agent rejected: the reason in words, then the agent's message if any. */
export function rejectMessage(reason: RejectJobRequest['reason'], message: string | undefined): string {
  const text = message?.trim();
  return text ? `${REJECT_MESSAGES[reason]}: ${storableText(text)}` : REJECT_MESSAGES[reason];
}
