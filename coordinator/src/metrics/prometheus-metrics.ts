import { DEVICE_STATES, TERMINAL_JOB_STATUSES } from '@drover/shared';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import {
  RATE_LIMIT_KINDS,
  STORAGE_DIRECTIONS,
  type DeviceCount,
  type Metrics,
  type RateLimitKind,
  type StorageDirection,
} from '../domain/metrics.js';
import { JOB_SOURCES, type JobSource } from '../domain/model/jobs.js';
import type { AgentLastSeen } from '../domain/model/agents.js';
import { DELETED_KINDS, type Deleted } from '../domain/model/retention.js';
import { HttpSeries } from './http-series.js';
import { processRegistry } from './process-registry.js';

/** The `route` label of a request that matched no route: one value, whatever the URL was. */
export const UNMATCHED_ROUTE = 'unmatched';
/** The `state` of a device binding that has not reported yet. */
export const UNREPORTED_DEVICE_STATE = 'unreported';

/** Seconds, for HTTP answers and the push of a job to its agent: 1 ms to 10 s. */
const FAST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds a job waits or runs: 10 ms to 3 hours. */
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 10800];
/** Seconds of a database commit: 50 µs to 1 s. */
const COMMIT_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1];
/** The `kind` label of the rows the retention sweep deleted. */
export const RETENTION_KIND_LABELS: Readonly<Record<keyof Deleted, string>> = Object.freeze({
  jobs: 'jobs',
  logLines: 'log_lines',
  auditEntries: 'audit_entries',
  occurrences: 'cron_occurrences',
  batches: 'batches',
  rolloutEvents: 'rollout_events',
});
/** Operations per group commit. */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

export interface MetricsLogger {
  error(obj: object, msg: string): void;
}

/**
 * The coordinator's figures as Prometheus series through prom-client (docs/metrics.md lists each):
 * the domain's events (the `Metrics` it calls), the HTTP answers (`observeHttp`, from the app's
 * response hook) and, at each scrape, the gauges read from their sources and prom-client's
 * default process series. One registry per coordinator, so that several in one process (tests)
 * do not count into each other.
 */
export class PrometheusMetrics implements Metrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;

  private readonly http = new HttpSeries(
    { requests: 'drover_http_requests_total', duration: 'drover_http_request_duration_seconds' },
    {
      requests: `HTTP requests answered, by route pattern ("${UNMATCHED_ROUTE}" when none matched), method and status`,
      duration: 'Time from a request arriving to its answer being sent, by route pattern and method',
    },
    FAST_BUCKETS,
  );
  private readonly jobsCreated = new Counter({
    name: 'drover_jobs_created_total',
    help: 'Jobs stored, by source (webhook, cron, manual, slack, discord, ota); refused runs included',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });
  private readonly jobsFinished = new Counter({
    name: 'drover_jobs_finished_total',
    help: 'Jobs that reached a terminal status, by that status',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  private readonly queueWait = new Histogram({
    name: 'drover_job_queue_wait_seconds',
    help: 'Time from a job being created to it starting on its agent',
    buckets: JOB_BUCKETS,
    registers: [this.registry],
  });
  private readonly runTime = new Histogram({
    name: 'drover_job_run_seconds',
    help: 'Time from a job starting to its end, for jobs that started',
    buckets: JOB_BUCKETS,
    registers: [this.registry],
  });
  private readonly dispatchLatency = new Histogram({
    name: 'drover_dispatch_latency_seconds',
    help: "Time from a job's creation to its event being written to its agent's open stream",
    buckets: FAST_BUCKETS,
    registers: [this.registry],
  });
  private readonly rateLimitBlocks = new Counter({
    name: 'drover_rate_limit_blocks_total',
    help: 'Calls refused with 429 by a limit or a throttle, by kind (token, workflow, token_read, sign_in, enrollment)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly idempotentReplays = new Counter({
    name: 'drover_idempotent_replays_total',
    help: 'Trigger runs answered with the job of an earlier call with the same Idempotency-Key',
    registers: [this.registry],
  });
  private readonly storageBytesTotal = new Counter({
    name: 'drover_storage_bytes_total',
    help: 'File bytes received (upload) and sent (download) through the local backend presigned URLs',
    labelNames: ['direction'] as const,
    registers: [this.registry],
  });
  private readonly dbCommitSeconds = new Histogram({
    name: 'drover_db_commit_seconds',
    help: 'Time of one group commit of the database writer',
    buckets: COMMIT_BUCKETS,
    registers: [this.registry],
  });
  private readonly dbCommitBatch = new Histogram({
    name: 'drover_db_commit_batch_size',
    help: 'Write operations carried by one group commit',
    buckets: BATCH_BUCKETS,
    registers: [this.registry],
  });

  private readonly retentionRows = new Counter({
    name: 'drover_retention_deleted_rows_total',
    help: 'Rows the retention sweep deleted past their retention, by kind (jobs, log_lines, audit_entries, cron_occurrences, batches, rollout_events)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly retentionBatchSeconds = new Histogram({
    name: 'drover_retention_batch_seconds',
    help: 'Time one deleting batch of the retention sweep held the database',
    buckets: COMMIT_BUCKETS,
    registers: [this.registry],
  });

  private readonly reconnectsShed = new Counter({
    name: 'drover_agent_reconnects_shed_total',
    help: "Agents' connect-time calls (stream opens, reports) shed by the reconnect budget with 503 and Retry-After",
    registers: [this.registry],
  });

  private readonly agentReaders = new Set<() => number>();
  private readonly sizeReaders = new Set<() => Promise<number>>();
  private readonly deviceReaders = new Set<() => Promise<readonly DeviceCount[]>>();
  private readonly lastSeenReaders = new Set<() => Promise<readonly AgentLastSeen[]>>();

  /** prom-client's process series, made now so that its event-loop monitor has samples by the first scrape. */
  private readonly processSeries = processRegistry();

  constructor(logger: MetricsLogger) {
    for (const metric of this.http.metrics()) this.registry.registerMetric(metric);
    const agentReaders = this.agentReaders;
    new Gauge({
      name: 'drover_agents_connected',
      help: 'Agent streams open on this coordinator',
      registers: [this.registry],
      collect() {
        let open = 0;
        for (const read of agentReaders) open += read();
        this.set(open);
      },
    });
    const deviceReaders = this.deviceReaders;
    new Gauge({
      name: 'drover_ota_devices',
      help: `Device bindings of applications not deleted, by state ("${UNREPORTED_DEVICE_STATE}" before the first report)`,
      labelNames: ['state'] as const,
      registers: [this.registry],
      async collect() {
        const counts: Record<string, number> = {};
        for (const state of [...DEVICE_STATES, UNREPORTED_DEVICE_STATE]) counts[state] = 0;
        try {
          for (const read of deviceReaders) {
            for (const { state, count } of await read()) {
              const label = state ?? UNREPORTED_DEVICE_STATE;
              counts[label] = (counts[label] ?? 0) + count;
            }
          }
        } catch (error) {
          logger.error({ err: error }, 'could not count the device bindings for drover_ota_devices');
          this.reset();
          return;
        }
        for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
      },
    });
    const lastSeenReaders = this.lastSeenReaders;
    new Gauge({
      name: 'drover_agent_last_seen_timestamp_seconds',
      help: 'When each agent not revoked was last seen (Unix seconds; refreshed at every ping while its stream is open)',
      labelNames: ['agent_id', 'agent'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        try {
          for (const read of lastSeenReaders) {
            for (const a of await read()) this.set({ agent_id: a.id, agent: a.name }, Date.parse(a.lastSeenAt) / 1000);
          }
        } catch (error) {
          logger.error({ err: error }, 'could not read the agents for drover_agent_last_seen_timestamp_seconds');
          this.reset();
        }
      },
    });
    const sizeReaders = this.sizeReaders;
    new Gauge({
      name: 'drover_database_size_bytes',
      help: "The database's size (SQLite: its file's pages; PostgreSQL: pg_database_size)",
      registers: [this.registry],
      async collect() {
        try {
          let bytes = 0;
          for (const read of sizeReaders) bytes = Math.max(bytes, await read());
          this.set(bytes);
        } catch (error) {
          logger.error({ err: error }, 'could not read the database size for drover_database_size_bytes');
          this.reset();
        }
      },
    });
    // Every series of a known label set exists from the start, at 0: a rate over it is 0, not absent.
    for (const kind of DELETED_KINDS) this.retentionRows.inc({ kind: RETENTION_KIND_LABELS[kind] }, 0);
    for (const source of JOB_SOURCES) this.jobsCreated.inc({ source }, 0);
    for (const status of TERMINAL_JOB_STATUSES) this.jobsFinished.inc({ status }, 0);
    for (const kind of RATE_LIMIT_KINDS) this.rateLimitBlocks.inc({ kind }, 0);
    for (const direction of STORAGE_DIRECTIONS) this.storageBytesTotal.inc({ direction }, 0);
  }

  /** One HTTP answer: `route` is the route's pattern (`/v1/jobs/:id`), null when none matched. */
  observeHttp(route: string | null, method: string, status: number, seconds: number): void {
    this.http.observe(route ?? UNMATCHED_ROUTE, method, status, seconds);
  }

  jobCreated(source: JobSource): void {
    this.jobsCreated.inc({ source });
  }

  jobStarted(queueWaitSeconds: number): void {
    this.queueWait.observe(queueWaitSeconds);
  }

  jobFinished(status: (typeof TERMINAL_JOB_STATUSES)[number], runSeconds: number | null): void {
    this.jobsFinished.inc({ status });
    if (runSeconds !== null) this.runTime.observe(runSeconds);
  }

  jobDispatched(latencySeconds: number): void {
    this.dispatchLatency.observe(latencySeconds);
  }

  rateLimitBlocked(kind: RateLimitKind): void {
    this.rateLimitBlocks.inc({ kind });
  }

  idempotentReplay(): void {
    this.idempotentReplays.inc();
  }

  storageBytes(direction: StorageDirection, bytes: number): void {
    if (bytes > 0) this.storageBytesTotal.inc({ direction }, bytes);
  }

  dbCommit(seconds: number, batchSize: number): void {
    this.dbCommitSeconds.observe(seconds);
    this.dbCommitBatch.observe(batchSize);
  }

  retentionDeleted(kind: keyof Deleted, rows: number): void {
    this.retentionRows.inc({ kind: RETENTION_KIND_LABELS[kind] }, rows);
  }

  retentionBatch(seconds: number): void {
    this.retentionBatchSeconds.observe(seconds);
  }

  reconnectShed(): void {
    this.reconnectsShed.inc();
  }

  readDatabaseSize(read: () => Promise<number>): () => void {
    this.sizeReaders.add(read);
    return () => this.sizeReaders.delete(read);
  }

  readAgentsConnected(read: () => number): () => void {
    this.agentReaders.add(read);
    return () => this.agentReaders.delete(read);
  }

  readOtaDevices(read: () => Promise<readonly DeviceCount[]>): () => void {
    this.deviceReaders.add(read);
    return () => this.deviceReaders.delete(read);
  }

  readAgentsLastSeen(read: () => Promise<readonly AgentLastSeen[]>): () => void {
    this.lastSeenReaders.add(read);
    return () => this.lastSeenReaders.delete(read);
  }

  /** The text a scrape gets: this coordinator's series, then the process's. */
  async render(): Promise<string> {
    const [own, proc] = await Promise.all([this.registry.metrics(), this.processSeries.metrics()]);
    return `${own.trimEnd()}\n\n${proc.trimEnd()}\n`;
  }
}
