import { isTerminalJobStatus, type DeviceState, type JobStatus } from '@drover/shared';
import { desiredState, runsRelease } from './desired-state.js';
import type { MaintenanceWindow } from '../model/applications.js';
import type { DesiredState, EvaluationReason, HoldReason, JobEndOutcome } from '../model/device-bindings.js';
import type { ReleaseFacts, ReleaseStatus } from '../model/releases.js';
import { windowState, type WindowState } from './maintenance-window.js';
import { MAX_FAILED_ATTEMPTS, settleJobEnd, type RetryFields } from './retry-policy.js';

/**
 * One evaluation of a device binding (docs/ota.md, "Evaluation"), as a pure plan: settle its
 * update job if that ended, apply the resets of the event that caused the evaluation, compute
 * the desired state, then keep, replace or issue the update job. evaluate-binding.ts turns the
 * plan into writes, which the repository makes in the transaction of its reads, so two
 * evaluations never issue two jobs for a binding.
 */

/** The binding fields an evaluation reads and writes. */
export interface BindingFacts extends RetryFields {
  channel: string;
  activeJobId: string | null;
  /** Unix ms: the next window's opening while the update waits for the maintenance window; else null. */
  windowOpensAt: number | null;
  /** Unix ms: the end of the window in which the pending update job was issued; else null. */
  windowClosesAt: number | null;
}

/** The binding's active update job, as stored. */
export interface ActiveJobFacts {
  id: string;
  status: JobStatus;
  /** A user asked to cancel it. */
  cancelRequested: boolean;
  errorMessage: string | null;
  /** From the job's params. */
  release: { id: string; version: string; sequence: number };
  forced: boolean;
  /** The update workflow the job runs. */
  workflowName: string;
}

export interface EvaluationInput<R extends ReleaseFacts> {
  binding: BindingFacts;
  /** The releases of the application (any status and channel; see desiredState). */
  releases: readonly R[];
  /** The status of the current release when it is not in `releases`. */
  currentReleaseStatus?: ReleaseStatus | null;
  /** Releases whose staged rollout has not reached the device (desired-state.ts). */
  withheld?: ReadonlySet<string>;
  /** Null when `binding.activeJobId` is null (or names a job that no longer exists). */
  activeJob: ActiveJobFacts | null;
  /** The application's update workflow now: a pending job for another one is replaced. */
  updateWorkflowName: string;
  /** The application's maintenance window (null: none): optional updates start only inside it. */
  maintenanceWindow: MaintenanceWindow | null;
  /** A revoked agent gets no new job. */
  agentRevoked: boolean;
  reason: EvaluationReason;
  /** With reason `report`: the state the agent reported (undefined: none sent). */
  reportedState?: DeviceState | undefined;
  /** Unix ms. */
  now: number;
}

export interface EvaluationPlan<R extends ReleaseFacts> {
  /** The binding's fields after the evaluation. */
  binding: BindingFacts;
  state: DesiredState<R>;
  /** How the ended active job was settled, if it had ended. */
  settled: JobEndOutcome | null;
  /** A still-pending job that no longer matches the desired state: cancel it (then `issue` may follow). */
  supersede: { jobId: string; message: string } | null;
  /** Create an update job for this release (with `state.forced`). The repository sets `activeJobId`. */
  issue: R | null;
  /** A still-pending job to send again on the agent's stream (its deploy event may have been dropped). */
  repush: string | null;
  /** Why no job was issued (for logs and tests). */
  hold: HoldReason | null;
}

export const SUPERSEDED_MESSAGE = 'superseded: the desired release changed before the agent took the job';
export const WORKFLOW_CHANGED_MESSAGE =
  "superseded: the application's update workflow changed before the agent took the job";
export const NEEDLESS_MESSAGE = 'not needed: the device reported the release already installed';
export const WINDOW_CLOSED_MESSAGE = 'superseded: the maintenance window closed before the agent took the job';

/**
 * Reasons that start counting failures again, and lift the hold of a user's cancel: something
 * changed that a new attempt may fix, or someone asked for one.
 */
const RESETS_FAILURES: readonly EvaluationReason[] = ['publish', 'yank', 'channel', 'reconcile', 'workflow'];

export function planEvaluation<R extends ReleaseFacts>(input: EvaluationInput<R>): EvaluationPlan<R> {
  // Each evaluation decides anew whether the binding waits for a window, or has a pending job to
  // withdraw when its window closes.
  let b: BindingFacts = { ...input.binding, windowOpensAt: null, windowClosesAt: null };
  let active = input.activeJob && input.activeJob.id === b.activeJobId ? input.activeJob : null;
  if (b.activeJobId !== null && !active) b.activeJobId = null;

  let settled: JobEndOutcome | null = null;
  if (active && isTerminalJobStatus(active.status)) {
    const end = settleJobEnd(b, active, input.now);
    b = { ...b, ...end.fields, activeJobId: null };
    settled = end.outcome;
    active = null;
  }

  const state = desiredState({
    channel: b.channel,
    releases: input.releases,
    current: b.current,
    currentReleaseStatus: input.currentReleaseStatus ?? null,
    ...(input.withheld ? { withheld: input.withheld } : {}),
  });
  b = applyResets(b, input, active !== null, state.desired?.id ?? null);
  const plan = { state, settled, supersede: null, issue: null, repush: null };

  if (active) {
    // A device that reports the desired release already installed needs no pending job for it.
    const needless = active.status === 'pending' && state.desired !== null && runsRelease(b.current, state.desired);
    const fits = !needless && (active.status !== 'pending' || jobMatches(active, state, input.updateWorkflowName));
    // A job the agent took runs on past the window's end; one it has not taken starts only inside a window.
    const window = fits && active.status === 'pending' ? windowFor(state, input) : null;
    if (fits && window?.open !== false) {
      const repush =
        active.status === 'pending' && (input.reason === 'report' || input.reason === 'reconcile') ? active.id : null;
      if (window?.open) b = { ...b, windowClosesAt: window.closesAt };
      return { ...plan, binding: b, repush, hold: 'job_in_progress' };
    }
    const message = fits
      ? WINDOW_CLOSED_MESSAGE
      : needless
        ? NEEDLESS_MESSAGE
        : active.workflowName !== input.updateWorkflowName && jobMatches(active, state, active.workflowName)
          ? WORKFLOW_CHANGED_MESSAGE
          : SUPERSEDED_MESSAGE;
    const supersede = { jobId: active.id, message };
    b = { ...b, activeJobId: null };
    return { ...decideIssue(b, state, input), supersede };
  }
  return { ...decideIssue(b, state, input), settled };
}

function decideIssue<R extends ReleaseFacts>(
  b: BindingFacts,
  state: DesiredState<R>,
  input: EvaluationInput<R>,
): EvaluationPlan<R> {
  const base = { state, settled: null, supersede: null, repush: null };
  const hold = (reason: HoldReason, keepRetry = false): EvaluationPlan<R> => ({
    ...base,
    binding: keepRetry ? b : { ...b, retryAt: null },
    issue: null,
    hold: reason,
  });
  const desired = state.desired;
  if (input.agentRevoked) return hold('agent_revoked');
  if (!desired) return hold('no_release');
  if (runsRelease(b.current, desired)) return hold('up_to_date');
  if (b.cancelledJobId !== null) return hold('cancelled');
  if (b.postponedReleaseId !== null && b.postponedReleaseId !== desired.id) b = { ...b, postponedReleaseId: null };
  if (b.postponedReleaseId === desired.id && !state.forced) return hold('postponed');
  if (b.failedAttempts >= MAX_FAILED_ATTEMPTS) return hold('too_many_failures');
  if (b.retryAt !== null && b.retryAt > input.now) return hold('retry_later', true);
  const window = windowFor(state, input);
  if (window?.open === false) {
    // The sweep evaluates the binding again when the window opens (idsDue).
    return { ...hold('maintenance_window'), binding: { ...b, retryAt: null, windowOpensAt: window.opensAt } };
  }
  const windowClosesAt = window?.open ? window.closesAt : null;
  return { ...base, binding: { ...b, retryAt: null, windowClosesAt }, issue: desired, hold: null };
}

/**
 * The maintenance window that applies to an update to the desired release, at the evaluation's
 * instant: none (null) when the application has no window, the update is forced, or the desired
 * release is mandatory (they start at once), or the window never opens again (an expression that
 * passed validation always opens again: defensive, an update is never held for ever).
 */
function windowFor(state: DesiredState, input: EvaluationInput<ReleaseFacts>): WindowState | null {
  if (!input.maintenanceWindow || state.forced || state.desired?.updatePolicy === 'mandatory') return null;
  const window = windowState(input.maintenanceWindow, input.now);
  return window.open || window.opensAt !== null ? window : null;
}

/** A pending job still fits when it installs the desired release with the same `forced` and workflow. */
function jobMatches(job: ActiveJobFacts, state: DesiredState, workflowName: string): boolean {
  return (
    state.desired !== null &&
    job.release.id === state.desired.id &&
    job.forced === state.forced &&
    job.workflowName === workflowName
  );
}

/**
 * The event's resets. A publish, a yank, a channel change and a reconcile count failures from
 * zero (a reconcile also lifts a postponement). A report while no job is in progress is the
 * device speaking for itself: `postponed` holds the desired release, any other state lifts a
 * postponement, and a state other than `failed`/`refused` lifts the failure limit.
 */
function applyResets(
  b: BindingFacts,
  input: EvaluationInput<ReleaseFacts>,
  jobInProgress: boolean,
  desiredId: string | null,
): BindingFacts {
  if (RESETS_FAILURES.includes(input.reason)) {
    const postponedReleaseId = input.reason === 'reconcile' ? null : b.postponedReleaseId;
    return { ...b, failedAttempts: 0, retryAt: null, postponedReleaseId, cancelledJobId: null };
  }
  if (input.reason !== 'report' || jobInProgress) return b;
  const state = input.reportedState;
  const next = { ...b };
  if (state === 'postponed') next.postponedReleaseId = desiredId ?? b.postponedReleaseId;
  else next.postponedReleaseId = null;
  if (state !== 'failed' && state !== 'refused') next.failedAttempts = 0;
  return next;
}
