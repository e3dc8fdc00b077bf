import type { JobAssignment, RejectJobRequest } from '@drover/shared';
import type { JournalEntry } from './journal.js';

export type IntakeDecision =
  /** Nothing to do: the job is known and in hand, or settled. */
  | { action: 'ignore'; why: string }
  /** A new job: accept it into the queue. */
  | { action: 'accept' }
  /** A new job the agent will not take. */
  | { action: 'reject'; reason: RejectJobRequest['reason']; message: string }
  /** Unknown here but queued or running on the coordinator: lost in an agent restart. */
  | { action: 'fail_lost' }
  /** Accepted before a restart and never started: queue it again. */
  | { action: 'requeue' }
  /** Marked running, but not running here: interrupted by a crash or restart. */
  | { action: 'fail_interrupted' }
  /** Its journal entry was found damaged: it may have run (Journal.isDamaged), so it never runs. */
  | { action: 'fail_damaged' }
  /** Settled here, but the coordinator does not have the result or refusal (never got it, or lost it): send it again. */
  | { action: 'resend_final' };

export interface IntakeContext {
  /** The job's journal entry, when the agent has seen the job before. */
  entry: JournalEntry | undefined;
  /** The job's journal file was found damaged at start (Journal.isDamaged): seen, outcome unknown. */
  damaged: boolean;
  /** The job is in this process's queue or running now. */
  active: boolean;
  /** The job's result or refusal is on its way (being sent, or in the outbox). */
  finalPending: boolean;
  shuttingDown: boolean;
  queueFull: boolean;
  capacity: number;
  /** Why the workflow cannot run here (unknown or invalid locally), or null when it can. */
  workflowProblem: string | null;
  /** Why the params do not fit the workflow file here (params-check.ts), or null when they do. */
  paramsProblem: string | null;
}

/**
 * What to do with a `job` event (docs/agent.md, "Jobs"): the journal makes each job id run at
 * most once, so a redelivery after a reconnect or a restart never starts a job twice.
 */
export function decideIntake(assignment: JobAssignment, ctx: IntakeContext): IntakeDecision {
  const { entry } = ctx;
  if (entry) {
    if (ctx.active) return { action: 'ignore', why: 'already in the queue or running' };
    switch (entry.state) {
      case 'accepted':
        // Reported started, never started here: the agent stopped before its `running` entry was
        // on disk (it is flushed while the start is reported, never after a step starts).
        if (assignment.status === 'running') return { action: 'fail_lost' };
        return ctx.shuttingDown ? { action: 'ignore', why: 'the agent is shutting down' } : { action: 'requeue' };
      case 'running':
        return { action: 'fail_interrupted' };
      case 'finished':
      case 'rejected':
        if (ctx.finalPending) return { action: 'ignore', why: 'its result is on its way' };
        // The coordinator sends open jobs only: one it sends again after taking its result has
        // lost it (its database was restored from a backup older than the result), and would
        // hold it open for ever, filling the queue. The report is idempotent: sent again.
        return { action: 'resend_final' };
      case 'abandoned':
        // The coordinator refused its accept or its start, so none of its steps ran here. Sent
        // again `pending`, the job waits again (a pool's job that went back to its pool while this
        // agent could not be reached, then handed to it again; a database restored from an older
        // backup): it is decided below as a new one, where ignoring it left it pending for ever.
        // Sent `queued` or `running`, the coordinator counts it as this agent's while nothing runs
        // it here: lost, as an unknown one is.
        break;
      default:
        // The journal reads no other state (a damaged entry is skipped); were one to get here, the
        // job was seen before, in a state this build does not know: it is not run again.
        return { action: 'ignore', why: `its journal state ${JSON.stringify(entry.state)} is unknown here` };
    }
  }
  if (ctx.damaged) return { action: 'fail_damaged' };
  if (assignment.status !== 'pending') return { action: 'fail_lost' };
  if (ctx.shuttingDown) return { action: 'reject', reason: 'shutting_down', message: 'the agent is shutting down' };
  if (ctx.workflowProblem) return { action: 'reject', reason: 'unknown_workflow', message: ctx.workflowProblem };
  if (ctx.paramsProblem) return { action: 'reject', reason: 'invalid_params', message: ctx.paramsProblem };
  if (ctx.queueFull) {
    return {
      action: 'reject',
      reason: 'queue_full',
      message: `it already holds ${ctx.capacity} job${ctx.capacity === 1 ? '' : 's'}, its capacity`,
    };
  }
  return { action: 'accept' };
}

export const LOST_MESSAGE = 'the agent restarted and lost this job';
export const DAMAGED_MESSAGE =
  "not run: the agent's journal entry for this job was damaged (a power cut?), so it may have run already";
export const INTERRUPTED_MESSAGE = 'interrupted: the agent stopped while the job was running (crash or restart)';
export const CANCELLED_BEFORE_START_MESSAGE = 'cancelled: the agent shut down before the job started';
export const CANCELLED_BY_USER_BEFORE_START_MESSAGE = 'cancelled: a user cancelled the job before it started';
export const CANCELLED_NOT_HELD_MESSAGE = 'cancelled: a user cancelled the job, which this agent did not hold';
