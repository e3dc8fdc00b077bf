import type { DeviceState, TerminalJobStatus } from '@drover/shared';
import type { AgentLastSeen } from './model/agents.js';
import type { JobSource } from './model/jobs.js';
import type { Deleted } from './model/retention.js';

/**
 * What the domain tells about itself for the operators' figures (docs/metrics.md). The domain
 * calls these where each event happens; how they are counted (Prometheus, through prom-client)
 * is the edge's business (metrics/), and `noMetrics` is what a coordinator without metrics gets.
 * Every method is cheap and synchronous, and must never throw into the code that calls it.
 *
 * Counts are of this process: several coordinators each count what they did, and Prometheus
 * adds them up.
 */
export interface Metrics {
  /** A job was stored: `pending` (to run), or `rejected` at once (a limit or a rule refused the run). */
  jobCreated(source: JobSource, status: 'pending' | 'rejected'): void;
  /** A job started running, `queueWaitSeconds` after it was created. */
  jobStarted(queueWaitSeconds: number): void;
  /** A job reached its terminal status; `runSeconds` from its start, null when it never started. */
  jobFinished(status: TerminalJobStatus, runSeconds: number | null): void;
  /** A job created while its agent's stream was open here was written to that stream, this long after its creation. */
  jobDispatched(latencySeconds: number): void;
  /** A call refused by a limit or a throttle (answered 429). */
  rateLimitBlocked(kind: RateLimitKind): void;
  /** A trigger run answered with the job of an earlier call with the same Idempotency-Key. */
  idempotentReplay(): void;
  /** File bytes that went through this coordinator (the local backend's presigned URLs). */
  storageBytes(direction: StorageDirection, bytes: number): void;
  /** One group commit of the database writer: how long it took and how many operations it carried. */
  dbCommit(seconds: number, batchSize: number): void;
  /** Agent streams open on this coordinator, read at each scrape. Returns the function that stops reading it. */
  readAgentsConnected(read: () => number): () => void;
  /** Device bindings per state (null: no report yet), read at each scrape. */
  readOtaDevices(read: () => Promise<readonly DeviceCount[]>): () => void;
  /** When each agent not revoked was last seen, read at each scrape. */
  readAgentsLastSeen(read: () => Promise<readonly AgentLastSeen[]>): () => void;
  /** Rows one deleting batch of the retention sweep removed, by kind. */
  retentionDeleted(kind: keyof Deleted, rows: number): void;
  /** How long one deleting batch of the retention sweep held the database. */
  retentionBatch(seconds: number): void;
  /** The database's size in bytes, read at each scrape. */
  readDatabaseSize(read: () => Promise<number>): () => void;
  /** An agent's connect-time call was shed by the reconnect budget (answered 503 with Retry-After). */
  reconnectShed(): void;
}

export interface DeviceCount {
  state: DeviceState | null;
  count: number;
}

/**
 * What a refused call ran into: a trigger run's API token or workflow limit, the API token
 * discovery read limit, the sign-in and enrollment throttles of failed attempts.
 */
export const RATE_LIMIT_KINDS = ['token', 'workflow', 'token_read', 'sign_in', 'enrollment'] as const;
export type RateLimitKind = (typeof RATE_LIMIT_KINDS)[number];

export const STORAGE_DIRECTIONS = ['upload', 'download'] as const;
export type StorageDirection = (typeof STORAGE_DIRECTIONS)[number];

const nothing = () => {};

/** Measures nothing: a coordinator whose metrics are off pays for a call that returns. */
export const noMetrics: Metrics = Object.freeze({
  jobCreated: nothing,
  jobStarted: nothing,
  jobFinished: nothing,
  jobDispatched: nothing,
  rateLimitBlocked: nothing,
  idempotentReplay: nothing,
  storageBytes: nothing,
  dbCommit: nothing,
  readAgentsConnected: () => nothing,
  readOtaDevices: () => nothing,
  readAgentsLastSeen: () => nothing,
  retentionDeleted: nothing,
  retentionBatch: nothing,
  reconnectShed: nothing,
  readDatabaseSize: () => nothing,
});

/** Seconds between two ISO instants, never negative (clocks that step back are not a negative duration). */
export function secondsBetween(fromIso: string, toIso: string): number {
  return Math.max(0, (Date.parse(toIso) - Date.parse(fromIso)) / 1000);
}
