import type { DeviceState } from '@drover/shared';
import type { AgentStatus } from './agents.js';
import type { MaintenanceWindow } from './applications.js';
import type { Job, NewJob } from './jobs.js';
import type { Release, ReleaseFacts } from './releases.js';

/** Where a binding comes from: `agentIds` (manual) or the application's device selector (docs/ota.md). */
export const BINDING_ORIGINS = ['manual', 'selector'] as const;
export type BindingOrigin = (typeof BINDING_ORIGINS)[number];

/** A device binding (migration 0006): an application on an agent. */
export interface DeviceBinding {
  id: string;
  orgId: string;
  applicationId: string;
  agentId: string;
  channel: string;
  /** Bound by `agentIds` (never removed by the selector) or by the application's device selector. */
  origin: BindingOrigin;
  /** The observed installation, or null until one is observed. */
  current: Installation | null;
  /** What the last evaluation decided (answers recompute it). */
  desiredReleaseId: string | null;
  forced: boolean;
  state: DeviceState | null;
  error: string | null;
  activeJobId: string | null;
  lastReportAt: string | null;
  failedAttempts: number;
  retryAt: string | null;
  postponedReleaseId: string | null;
  /** The update job a user cancelled: no new one is issued until a reconcile (docs/ota.md). */
  cancelledJobId: string | null;
  /** The next window's opening while the update waits for the application's maintenance window; else null. */
  windowOpensAt: string | null;
  /** The end of the window in which the pending update job was issued (it is withdrawn then if not taken); else null. */
  windowClosesAt: string | null;
  createdAt: string;
}

export interface BindInput {
  orgId: string;
  applicationId: string;
  /** One binding per agent, in this order; ids are given by the caller. */
  bindings: { id: string; agentId: string }[];
  channel: string;
  at: string;
}

/** A binding removed, with its update job if the removal cancelled it (it was still `pending`). */
export interface RemovedBinding {
  binding: DeviceBinding;
  cancelledJobId: string | null;
}

export type BindResult =
  | { outcome: 'bound'; bindings: DeviceBinding[] }
  | { outcome: 'already_bound'; agentIds: string[] }
  /** The application was deleted meanwhile: nothing bound. */
  | { outcome: 'not_found' };

/** What an agent's report writes before the evaluation it causes. Omitted fields stay as they are. */
export interface ReportWrite {
  current?: Installation | undefined;
  state?: DeviceState | undefined;
  /** Omitted with a `state`: the error is cleared. */
  error?: string | null | undefined;
  at: string;
}

export interface EvaluationRequest {
  bindingId: string;
  reason: EvaluationReason;
  report?: ReportWrite | undefined;
}

export interface EvaluationOutcome {
  bindingId: string;
  /** The binding after the evaluation; null when it (or its application) no longer exists. */
  binding: DeviceBinding | null;
  state: DesiredState<Release> | null;
  settled: JobEndOutcome | null;
  createdJobId: string | null;
  supersededJobId: string | null;
  repushJobId: string | null;
  hold: HoldReason | null;
}

/** A binding as the application's list gives it: its insertion key too (a page's cursor). */
export interface ListedDeviceBinding extends DeviceBinding {
  listKey: number;
}

export interface DeviceBindingRepository {
  /** Binds agents in one transaction; none is bound when one of them already is (`already_bound`). */
  bind(input: BindInput): Promise<BindResult>;
  findInApp(applicationId: string, id: string): Promise<DeviceBinding | null>;
  /** In bind order, each with its place in it (`listKey`, increasing). */
  listByApp(applicationId: string): Promise<ListedDeviceBinding[]>;
  /** At most `limit` of the application's bindings bound after the one of list key `after` (0: from the first), in bind order. */
  pageByApp(applicationId: string, after: number, limit: number): Promise<ListedDeviceBinding[]>;
  countByApp(applicationId: string): Promise<number>;
  /** The agent's bindings to applications not deleted, in bind order. */
  listByAgent(agentId: string): Promise<DeviceBinding[]>;
  findForAgent(agentId: string, applicationId: string): Promise<DeviceBinding | null>;
  changeChannel(applicationId: string, id: string, channel: string): Promise<DeviceBinding | null>;
  /** Removes the binding; its update job is cancelled with `message` if still `pending`. */
  unbind(applicationId: string, id: string, at: string, message: string): Promise<RemovedBinding | null>;
  /** Bindings on the channel, and bindings whose current release is `releaseId` (any order). */
  idsToEvaluate(applicationId: string, channel: string, releaseId: string): Promise<string[]>;
  /**
   * Bindings the sweep must evaluate: a retry that is due, a maintenance window that opened for a
   * held update or closed on a pending job, or an update job that ended unsettled.
   */
  idsDue(now: string, limit: number): Promise<string[]>;
  /** Bindings of applications not deleted, per state (null: no report yet), for the metrics. */
  countByState(): Promise<{ state: DeviceState | null; count: number }[]>;
  /** The binding whose active update job is `jobId`. */
  bindingOfActiveJob(jobId: string): Promise<string | null>;
  /** The applications update jobs were issued for (also after their bindings were removed); others are absent. */
  applicationsOfUpdateJobs(jobIds: readonly string[]): Promise<{ jobId: string; applicationId: string }[]>;
  /**
   * Evaluates bindings in one transaction: for each, reads what the evaluation needs, lets the
   * domain decide (EvaluateBinding: settles an ended job, cancels a superseded pending job,
   * issues the update job with `active_job_id` set) and writes the result. `now` is Unix ms.
   */
  evaluate(requests: readonly EvaluationRequest[], now: number): Promise<EvaluationOutcome[]>;
}

/** What one evaluation reads, inside the evaluation's transaction. */
export interface BindingEvaluationFacts {
  request: EvaluationRequest;
  /** The binding as stored. */
  binding: DeviceBinding;
  /** Its application (not deleted). */
  app: { id: string; orgId: string; updateWorkflowName: string; maintenanceWindow: MaintenanceWindow | null };
  /** The application's releases, of any channel and status. */
  releases: readonly Release[];
  /** Releases whose staged rollout has not reached the binding yet (they do not count for it). */
  withheld: ReadonlySet<string>;
  /** The binding's active update job as stored; null when it has none or it no longer exists. */
  activeJob: Job | null;
  /** The bound agent's status (null: no such agent). */
  agentStatus: AgentStatus | null;
  /** Unix ms. */
  now: number;
}

/** What one evaluation writes, in this order, and what it tells its caller. */
export interface BindingEvaluation {
  /** A pending update job to cancel: it is cancelled only if it is still `pending`. */
  supersede: { jobId: string; message: string; at: string } | null;
  /**
   * The update job to create, recorded as the binding's update job for `releaseId`; its timeout
   * is the timeout of the agent's active workflow of that name.
   */
  issue: { job: Omit<NewJob, 'timeoutMs'>; releaseId: string } | null;
  /** The binding to store: the report's observations and the evaluation's result (its new active job included). */
  binding: DeviceBinding;
  state: DesiredState<Release>;
  settled: JobEndOutcome | null;
  repushJobId: string | null;
  hold: HoldReason | null;
}

/** One evaluation of a device binding (domain/ota/evaluate-binding.ts), run inside the repository's transaction. */
export type EvaluateBinding = (facts: BindingEvaluationFacts) => BindingEvaluation;

/** Why a binding is evaluated (docs/ota.md, "Evaluation"). */
export const EVALUATION_REASONS = [
  'publish',
  'yank',
  'bind',
  'channel',
  'report',
  'reconcile',
  'job_end',
  'sweep',
  'workflow',
  'window',
] as const;
export type EvaluationReason = (typeof EVALUATION_REASONS)[number];

/** Why an evaluation issued no update job. */
export type HoldReason =
  | 'job_in_progress'
  | 'agent_revoked'
  | 'no_release'
  | 'up_to_date'
  | 'cancelled'
  | 'postponed'
  | 'too_many_failures'
  | 'retry_later'
  | 'maintenance_window';

/** What the end of an update job does to its binding (docs/ota.md, "Update jobs"). */
export type JobEndOutcome = 'installed' | 'failed' | 'postponed' | 'cancelled' | 'reissue';

/** An installation the coordinator observed. `releaseId` is null when the agent reported only a version. */
export interface Installation {
  releaseId: string | null;
  version: string;
  sequence: number;
}

/** Why a device must update. */
export type ForceReason = 'below_minimum' | 'current_yanked';

/** What a device binding should run (docs/ota.md): the desired release and the minimum. */
export interface DesiredState<R extends ReleaseFacts = ReleaseFacts> {
  /** The published, not yanked release of the channel with the highest sequence, or null. */
  desired: R | null;
  /** Sequence and version of the highest mandatory one (0 and "" when there is none). */
  minSequence: number;
  minVersion: string;
  /** The device must update: it is below `minSequence`, or its current release was yanked. */
  forced: boolean;
  forceReason: ForceReason | null;
}
