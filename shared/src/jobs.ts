/**
 * The job protocol between coordinator and agent (docs/agent-protocol.md, "Jobs"): what the
 * stream pushes and what the agent reports back. Schema + type pairs, like wire.ts.
 */

export const JOB_STATUSES = [
  'pending',
  'queued',
  'running',
  'success',
  'failed',
  'timed_out',
  'cancelled',
  'rejected',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** Where a job came from: a trigger's source of runs, or `ota` for an update job. */
export const JOB_SOURCES = ['webhook', 'cron', 'manual', 'slack', 'discord', 'ota'] as const;
export type JobSource = (typeof JOB_SOURCES)[number];
export const TERMINAL_JOB_STATUSES = ['success', 'failed', 'timed_out', 'cancelled', 'rejected'] as const;
export type TerminalJobStatus = (typeof TERMINAL_JOB_STATUSES)[number];
export const isTerminalJobStatus = (s: string): s is TerminalJobStatus =>
  (TERMINAL_JOB_STATUSES as readonly string[]).includes(s);

/** Event names of `GET /v1/agent/stream` (docs/agent-protocol.md). */
export const StreamEvent = {
  job: 'job',
  deploy: 'deploy',
  cancel: 'cancel',
  ping: 'ping',
  replaced: 'replaced',
} as const;
export type StreamEvent = (typeof StreamEvent)[keyof typeof StreamEvent];

/**
 * Data of a `replaced` event, the last of a stream that another connection of the same agent
 * replaced: an agent that receives it on the stream it reads has a twin, another process using
 * its identity (a copied state directory).
 */
export interface StreamReplacedEvent {
  /** The address the new connection came from, as the coordinator saw it. */
  by: string | null;
}

/**
 * Data of a `job` event (its SSE `id` is the job id). Sent when the job is created for a
 * connected agent, and again at every (re)connect for each of the agent's jobs that are still
 * `pending`, `queued` or `running` (`status` says which), so that nothing is lost; the agent
 * runs a job id at most once and answers a redelivery of a job it does not know, whose status
 * is `queued` or `running`, by failing it (it was lost in a restart).
 */
export interface JobAssignment {
  jobId: string;
  kind: 'trigger' | 'update';
  workflowName: string;
  /** Params with defaults applied; input FileRefs carry a fresh `downloadUrl`. */
  params: Record<string, unknown>;
  ref: string | null;
  debug: boolean;
  /** The whole job's limit in ms, or null (the agent's default applies). */
  timeoutMs: number | null;
  status: 'pending' | 'queued' | 'running';
  createdAt: string;
}

/**
 * Data of a `cancel` event (its SSE `id` is `cancel-<jobId>`): a user cancelled the job. The agent
 * takes a waiting job out of its queue, stops a running one (SIGTERM to its steps' process
 * groups, SIGKILL after the workflow's `cancelGrace`), and confirms with the job's `finish`
 * (`cancelled`, or the result it had already reached). A job it does not hold is confirmed with
 * a `cancelled` finish too. Sent at once when the stream is open, and at every (re)connect, before
 * any `job` event, until the agent has confirmed it.
 */
export const JobCancelEvent = {
  type: 'object',
  additionalProperties: false,
  required: ['jobId'],
  properties: { jobId: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;
export interface JobCancelEvent {
  jobId: string;
}

/** Data of a `ping` event, sent every few seconds while the stream is open. */
export interface PingData {
  at: string;
}

/** `POST /v1/agent/jobs/:jobId/reject`: the agent refused the job (queue full, unknown workflow). */
export const RejectJobRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['reason'],
  properties: {
    reason: { type: 'string', enum: ['queue_full', 'unknown_workflow', 'invalid_params', 'shutting_down'] },
    message: { type: 'string', maxLength: 2000 },
  },
} as const;
export interface RejectJobRequest {
  reason: 'queue_full' | 'unknown_workflow' | 'invalid_params' | 'shutting_down';
  message?: string;
}

export const LOG_STREAMS = ['stdout', 'stderr', 'system'] as const;
export type LogStream = (typeof LOG_STREAMS)[number];

/** One log line of a job, numbered by the agent from 1 so that a resend is harmless. */
export const JobLogLine = {
  type: 'object',
  additionalProperties: false,
  required: ['seq', 'at', 'stream', 'text'],
  properties: {
    seq: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    at: { type: 'string', format: 'date-time' },
    stream: { type: 'string', enum: LOG_STREAMS },
    step: { type: ['integer', 'null'], minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    text: { type: 'string', maxLength: 16384 },
  },
} as const;
export interface JobLogLine {
  seq: number;
  at: string;
  stream: LogStream;
  step?: number | null;
  text: string;
}

/** `POST /v1/agent/jobs/:jobId/logs`. */
export const AppendJobLogsRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['lines'],
  properties: { lines: { type: 'array', minItems: 1, maxItems: 1000, items: JobLogLine } },
} as const;
export interface AppendJobLogsRequest {
  lines: JobLogLine[];
}

/** `POST /v1/agent/jobs/:jobId/finish`: the job's one terminal result (resending it is harmless). */
export const FinishJobRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['status', 'exitCode', 'errorMessage', 'output'],
  properties: {
    status: { type: 'string', enum: ['success', 'failed', 'timed_out', 'cancelled'] },
    // A 32-bit signed integer, as PostgreSQL's column holds it (SQLite would hold more): the same
    // refusal on both databases. A process's status is 0–255; a Windows code fits as signed.
    exitCode: { type: ['integer', 'null'], minimum: -2147483648, maximum: 2147483647 },
    errorMessage: { type: ['string', 'null'], maxLength: 8192 },
    output: { type: 'object', maxProperties: 256, additionalProperties: true },
    finishedAt: { type: 'string', format: 'date-time' },
  },
} as const;
export interface FinishJobRequest {
  status: 'success' | 'failed' | 'timed_out' | 'cancelled';
  exitCode: number | null;
  errorMessage: string | null;
  output: Record<string, unknown>;
  finishedAt?: string;
}

/** Answer of the agent job endpoints: the job's status after the call. */
export interface JobStatusResponse {
  jobId: string;
  status: JobStatus;
}
