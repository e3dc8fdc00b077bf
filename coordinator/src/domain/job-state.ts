import type { JobStatus, RejectJobRequest } from '@drover/shared';
import type { FinishReport, Job, JobMove, JobMovePlan } from './model/jobs.js';

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
 */

/** The moves an agent reports. */
export type AgentTransition = 'accept' | 'reject' | 'start' | 'finish';

/** `apply`: make the move; `unchanged`: already made, answer 200 as is; `conflict`: 409. */
export type Decision = 'apply' | 'unchanged' | 'conflict';

export const OPEN_JOB_STATUSES = ['pending', 'queued', 'running'] as const satisfies readonly JobStatus[];
export type OpenJobStatus = (typeof OPEN_JOB_STATUSES)[number];
export const isOpenJobStatus = (s: JobStatus): s is OpenJobStatus =>
  (OPEN_JOB_STATUSES as readonly string[]).includes(s);

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
 * What an agent's report does to the job as stored: the decision and, when it applies, the new
 * status with its instants (the deadline of a queued or started job, the finish instant).
 */
export function planJobMove(job: Job, m: JobMove): JobMovePlan {
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
      const finishedAt = finishInstant(m.report.finishedAt, job.createdAt, m.at);
      return { decision, change: { status, exitCode, errorMessage, output, finishedAt } };
    }
  }
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
 * When the agent's reported finish instant is used: it may be earlier than now (a result kept in
 * the outbox while the coordinator was unreachable), but never before the job was created nor
 * after now (the agent's clock is not trusted beyond that).
 */
export function finishInstant(reported: string | undefined, createdAt: string, now: string): string {
  if (reported === undefined) return now;
  const ms = Date.parse(reported);
  if (!Number.isFinite(ms)) return now;
  const clamped = Math.min(Math.max(ms, Date.parse(createdAt)), Date.parse(now));
  return new Date(clamped).toISOString();
}

export const DEADLINE_MESSAGE = "no result from the agent before the job's deadline";
export const REVOKED_MESSAGE = 'the agent was revoked before the job finished';

const REJECT_MESSAGES: Record<RejectJobRequest['reason'], string> = {
  queue_full: "the agent's job queue is full",
  unknown_workflow: 'the agent does not know this workflow',
  invalid_params: 'the agent refused the params',
  shutting_down: 'the agent is shutting down',
};

/** The error message of a job the agent rejected: the reason in words, then the agent's message if any. */
export function rejectMessage(reason: RejectJobRequest['reason'], message: string | undefined): string {
  const text = message?.trim();
  return text ? `${REJECT_MESSAGES[reason]}: ${text}` : REJECT_MESSAGES[reason];
}
