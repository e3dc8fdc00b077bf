import type { DamagedRow } from '../../util/json.js';
import type { JobSource, JobStatus, LogStream, TerminalJobStatus } from '@drover/shared';

export type JobKind = 'trigger' | 'update';

/** The statuses of a job not yet ended (docs/jobs.md). */
export const OPEN_JOB_STATUSES = ['pending', 'queued', 'running'] as const satisfies readonly JobStatus[];
export type OpenJobStatus = (typeof OPEN_JOB_STATUSES)[number];
export const isOpenJobStatus = (s: JobStatus): s is OpenJobStatus =>
  (OPEN_JOB_STATUSES as readonly string[]).includes(s);

export { JOB_SOURCES, type JobSource } from '@drover/shared';

/** A job (docs/jobs.md) as the coordinator holds it. */
export interface Job {
  id: string;
  orgId: string;
  kind: JobKind;
  source: JobSource;
  triggerId: string | null;
  /** The agent that runs it; null for a job waiting in a pool until an agent takes it (docs/fleets.md). */
  agentId: string | null;
  /** The batch it is one job of, or null. */
  batchId: string | null;
  /** A job of a batch past its trigger's maxParallel: not handed out until one of the batch's jobs ends. */
  held: boolean;
  workflowId: string | null;
  workflowName: string;
  status: JobStatus;
  ref: string | null;
  debug: boolean;
  params: Record<string, unknown>;
  output: Record<string, unknown> | null;
  exitCode: number | null;
  errorMessage: string | null;
  forced: boolean;
  forceReason: string | null;
  apiTokenId: string | null;
  userId: string | null;
  timeoutMs: number | null;
  createdAt: string;
  queuedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  deadlineAt: string | null;
  /** When a user asked to cancel it (docs/jobs.md, "Cancellation"); null: never. */
  cancelRequestedAt: string | null;
  /** When its agent confirmed the cancel (its first report once the job had ended); null: not yet. */
  cancelAckedAt: string | null;
  seq: number;
  /** The organization's number of the job: 1, 2, 3, ... in creation order (docs/jobs.md, "Job numbers"). */
  number: number;
  /** A chat run's origin, or null. */
  chatOrigin: ChatOrigin | null;
}

/** Who started a chat run, and where (docs/chat.md). */
export interface ChatOrigin {
  provider: 'slack' | 'discord';
  /** Slack's workspace id or Discord's guild id. */
  teamId: string;
  /** Where the command was written and its outcome goes (a Discord thread's own id, in a thread). */
  channelId: string;
  userId: string;
  /** The name the provider gave for the user, as they wrote the command. */
  userName: string;
  /**
   * The message that held the command, answered in its thread (Slack's `ts` of a mention, or of
   * the thread it was written in; Discord's message id); absent for slash commands, whose text
   * the channel never saw.
   */
  messageId?: string | null;
}

/** A job to create (a trigger run, an update job). */
export interface NewJob {
  id: string;
  orgId: string;
  kind: JobKind;
  source: JobSource;
  triggerId: string | null;
  /** Null: a job of a pool, which the first matching agent with a free slot takes. */
  agentId: string | null;
  /** The batch it is one job of. */
  batchId?: string | null;
  /** Held until one of its batch's jobs ends (the trigger's maxParallel). */
  held?: boolean;
  workflowId: string | null;
  workflowName: string;
  /** `pending` for an accepted job, `rejected` for a refused call. */
  status: 'pending' | 'rejected';
  ref: string | null;
  debug: boolean;
  params: Record<string, unknown>;
  errorMessage: string | null;
  forced: boolean;
  forceReason: string | null;
  apiTokenId: string | null;
  userId: string | null;
  timeoutMs: number | null;
  createdAt: string;
  /** A chat run's origin; absent or null for every other job. */
  chatOrigin?: ChatOrigin | null;
}

export interface JobListQuery {
  status?: JobStatus | undefined;
  triggerId?: string | undefined;
  batchId?: string | undefined;
  agentId?: string | undefined;
  source?: JobSource | undefined;
  /** ISO times (UTC, `toISOString`): created at or after `createdAfter`, strictly before `createdBefore`. */
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  limit: number;
  /** Jobs created before this one (the previous page's last `seq`). */
  beforeSeq?: number | undefined;
}

export interface JobLogLineRecord {
  seq: number;
  at: string;
  stream: LogStream;
  step: number | null;
  text: string;
}

export interface NewLogLine {
  seq: number;
  at: string;
  stream: LogStream;
  step?: number | null | undefined;
  text: string;
}

/**
 * How a job's stored log is capped (docs/jobs.md, "Log lines"), as the domain decides it
 * (domain/jobs/job-logs.ts) and the repository applies it inside the write that stores a batch.
 */
export interface LogCap {
  /** The most bytes of text (UTF-8) a job's stored lines hold, the gap's line included. */
  maxBytes: number;
  /** The first lines are kept while their text fits in this many bytes: the head. */
  headBytes: number;
  /**
   * The most lines a job's stored log holds, the gap's line included: text bytes alone would let
   * empty lines pile up rows without end.
   */
  maxLines: number;
  /** The head is also at most this many lines. */
  headLines: number;
  /** The text of the one line that stands where lines were dropped, for all dropped so far. */
  gapText(dropped: { lines: number; bytes: number }): string;
}

/**
 * What storing a batch of log lines did: `stored` (`accepted` lines were new), `ended` (the job
 * has ended: nothing was stored), `not_found` (no such job for this agent).
 */
export type AppendLogsResult =
  | { outcome: 'stored'; job: Job; accepted: number }
  | { outcome: 'ended'; job: Job }
  | { outcome: 'not_found'; job?: undefined };

/** A page of a job's log (`listLogs`). */
export interface JobLogPage {
  lines: JobLogLineRecord[];
  /** More lines are stored after the page's last one (or after `afterSeq` when the page is empty). */
  more: boolean;
}

/** What a job's stored log holds now, and what its cap dropped. */
export interface JobLogSummary {
  /** Lines stored, the gap's line included. */
  lines: number;
  /** Their text's bytes (UTF-8). */
  bytes: number;
  /** Lines the cap dropped from the middle, and their text's bytes. */
  droppedLines: number;
  droppedBytes: number;
}

/**
 * What an agent's report did: `applied` (the move was made now), `unchanged` (it had been made
 * before: a harmless repeat), `conflict` (impossible from the job's status), `not_found` (no such
 * job for this agent). `job` is the job after the call.
 */
export type TransitionResult =
  { outcome: 'applied' | 'unchanged' | 'conflict'; job: Job } | { outcome: 'not_found'; job?: undefined };

export interface TransitionTime {
  /** ISO instant of the move. */
  at: string;
  /** Added to the job's timeout to make its deadline (queue and start). */
  deadlineGraceMs: number;
}

/** An agent's result of a job. */
export interface FinishReport {
  status: Exclude<TerminalJobStatus, 'rejected'>;
  exitCode: number | null;
  errorMessage: string | null;
  output: Record<string, unknown>;
  /** The agent's own finish instant (a result sent late from its outbox). */
  finishedAt?: string | undefined;
}

/** A user's cancel of a job (docs/jobs.md, "Cancellation"). */
export interface CancelRequest {
  /** ISO instant of the request. */
  at: string;
  /**
   * The instant past which a running job whose agent has not confirmed the cancel is ended by the
   * deadline sweep: the workflow's cancel grace plus the deadline grace after `at`.
   */
  confirmBy: string;
}

/**
 * A report of an agent about one of its jobs, or a user's cancel of a job of that agent (agentId
 * null: a job waiting in a pool, which no agent has taken).
 */
export type JobMove = { agentId: string | null; jobId: string } & (
  | ({ move: 'accept' | 'start' } & TransitionTime)
  | { move: 'reject'; errorMessage: string; at: string }
  | { move: 'finish'; report: FinishReport; at: string }
  | ({ move: 'cancel' } & CancelRequest)
);

/** What a move writes: the job's next status and the fields that go with it. */
export type JobChange =
  | { status: 'queued' | 'running'; at: string; deadlineAt: string | null }
  | { status: 'rejected'; at: string; errorMessage: string }
  | {
      status: FinishReport['status'];
      exitCode: number | null;
      errorMessage: string | null;
      output: Record<string, unknown>;
      finishedAt: string;
    }
  /** A pending or queued job cancelled at once. */
  | { status: 'cancelled'; cancel: 'now'; errorMessage: string; at: string }
  /** A running job: the cancel is recorded (for its agent), the status waits for the agent's result. */
  | { status: 'running'; cancel: 'requested'; at: string; deadlineAt: string };

/**
 * The decision on a move, from the job as stored: `apply` it with `change`, or it was made
 * before (`unchanged`) or is impossible (`conflict`).
 */
export type JobMovePlan = ({ decision: 'apply'; change: JobChange } | { decision: 'unchanged' | 'conflict' }) & {
  /** The report confirms a cancel requested of the job: record when (docs/jobs.md, "Cancellation"). */
  confirmsCancel?: true;
};

/** Decides a move (domain/jobs/job-state.ts); the job repository runs it inside the write. */
export type PlanJobMove = (job: Job, move: JobMove) => JobMovePlan;

/** An open job, in short (`listOpenOfAgents`). */
export interface OpenJobSummary {
  id: string;
  agentId: string;
  status: OpenJobStatus;
  createdAt: string;
  /** A cancel was asked for and the agent has not confirmed it. */
  cancelUnconfirmed: boolean;
}

/** Trigger jobs created in one hour that are in one status (JobRepository.countTriggerJobsByHour). */
export interface JobHourCount {
  /** The UTC hour of their creation, `YYYY-MM-DDTHH`. */
  hour: string;
  status: JobStatus;
  count: number;
}

export interface JobRepository {
  findById(id: string): Promise<Job | null>;
  /**
   * The jobs among `ids` that exist, in any order; one whose row does not parse (a damaged
   * database) is left out and named in `damaged`, so that it does not fail the others' read.
   */
  findByIds(ids: readonly string[]): Promise<{ jobs: Job[]; damaged: DamagedRow[] }>;
  findInOrg(orgId: string, id: string): Promise<Job | null>;
  /** Trigger jobs (never update jobs) of an organization, newest first. */
  listTriggerJobs(orgId: string, query: JobListQuery): Promise<Job[]>;
  /**
   * How many trigger jobs of the organization were created at or after `since` (an ISO instant),
   * by the UTC hour of their creation (`YYYY-MM-DDTHH`) and their status now; no row for none.
   */
  countTriggerJobsByHour(orgId: string, since: string): Promise<JobHourCount[]>;
  /** The organization's `running` trigger jobs, the newest first, at most `limit`. */
  listRunningTriggerJobs(orgId: string, limit: number): Promise<Job[]>;
  /** Its `failed` and `timed_out` trigger jobs, the one that ended last first, at most `limit`. */
  listRecentFailures(orgId: string, limit: number): Promise<Job[]>;
  /**
   * The agent's `pending`, `queued` and `running` jobs, oldest first (stream delivery order); a
   * job whose stored row does not parse (a damaged database) is left out and named in `damaged`,
   * so that it does not keep the agent's other jobs from it.
   */
  listOpenForAgent(agentId: string): Promise<{ jobs: Job[]; damaged: DamagedRow[] }>;
  /**
   * The open jobs of these agents in short, oldest first: what the streams of a coordinator
   * check against what they were told (domain/agents/stream-registry.ts, between coordinators).
   */
  listOpenOfAgents(agentIds: readonly string[]): Promise<OpenJobSummary[]>;
  /**
   * Log lines of a job in `seq` order after `afterSeq`: at most `limit` of them, and no more than
   * `maxBytes` of text (at least one line, whatever its size, when `limit` is not 0).
   */
  listLogs(jobId: string, page: { afterSeq: number; limit: number; maxBytes: number }): Promise<JobLogPage>;
  /** What the job's stored log holds (all zero for a job without lines). */
  logSummary(jobId: string): Promise<JobLogSummary>;
  /** `pending` → `queued`. */
  accept(agentId: string, jobId: string, time: TransitionTime): Promise<TransitionResult>;
  /** `pending` → `rejected`. */
  reject(agentId: string, jobId: string, errorMessage: string, at: string): Promise<TransitionResult>;
  /** `pending` | `queued` → `running`. */
  start(agentId: string, jobId: string, time: TransitionTime): Promise<TransitionResult>;
  /** Any open status → the reported terminal status, exactly once. */
  finish(agentId: string, jobId: string, report: FinishReport, at: string): Promise<TransitionResult>;
  /**
   * A user's cancel: `pending` | `queued` → `cancelled` at once; `running`: the request is recorded
   * and the job's deadline brought forward to `confirmBy`. A repeat on a running job is
   * `unchanged`; a finished job is a `conflict`.
   */
  cancel(agentId: string | null, jobId: string, request: CancelRequest): Promise<TransitionResult>;
  /** Ids of the agent's jobs whose cancel the agent has not confirmed yet, oldest first. */
  listUnconfirmedCancels(agentId: string): Promise<string[]>;
  /**
   * Stores log lines of an open job, ignoring any whose `(job, seq)` is stored already or was
   * dropped by the cap (resends are harmless); past `cap.maxBytes` the middle of the log is
   * dropped and one line stands in the gap (docs/jobs.md, "Log lines"). A job that ended takes no
   * more lines (`ended`). The status check, the lines and the cap are one atomic write.
   */
  appendLogs(agentId: string, jobId: string, lines: readonly NewLogLine[], cap: LogCap): Promise<AppendLogsResult>;
  /**
   * The deadline sweep: fails `running` jobs past their deadline, and `queued` ones past it whose
   * agent is not connected (a connected agent still holds its queue). Returns the failed job ids.
   */
  failOverdue(now: string, errorMessage: string): Promise<string[]>;
  /**
   * The sweep of cancels nobody confirmed: `running` jobs with a cancel request, past their
   * deadline, become `cancelled` with `errorMessage`. Returns their ids.
   */
  cancelOverdue(now: string, errorMessage: string): Promise<string[]>;
  /** Fails every open job of an agent (it was revoked). Returns the failed job ids. */
  failOpenOfAgent(agentId: string, errorMessage: string, at: string): Promise<string[]>;
  /**
   * Fails the open jobs of every revoked agent: those stored by a call that selected the agent
   * just before its revocation failed its open jobs. Returns the failed job ids.
   */
  failOpenOfRevoked(errorMessage: string, at: string): Promise<string[]>;
}
