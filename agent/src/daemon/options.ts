import { isSea } from 'node:sea';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Labels } from '@drover/shared';
import { KnownSecrets } from '../workflows/known-secrets.js';
import { builtInLabels } from './agent-labels.js';
import { DOWNLOAD_SPEED_WINDOW_MS } from '../files/download-speed.js';
import { DEFAULTS } from './defaults.js';

export { DEFAULTS };

/** How often a running agent removes the job directories and partial downloads the retention let go. */
export const PRUNE_INTERVAL_MS = 3_600_000;

/** Settings of `drover-agent run` (docs/agent.md, "Run options"). */
export interface DaemonOptions {
  stateDir: string;
  /** Default `<state-dir>/workflows`. */
  workflowsDir?: string | undefined;
  /** Jobs that may wait in the queue while one runs (default 4). */
  queueCapacity?: number | undefined;
  /** How long the running job may go on after SIGTERM before it is killed (default 30 s). */
  shutdownGraceMs?: number | undefined;
  /** Limit of a job whose workflow sets no timeout (default 1 h; null: none). */
  defaultJobTimeoutMs?: number | null | undefined;
  /** Between SIGTERM and SIGKILL to a step's process group (default 5 s). */
  killGraceMs?: number | undefined;
  /** The stream is reopened after this long without any event (default 45 s: 3 × the 15 s ping). */
  streamIdleTimeoutMs?: number | undefined;
  /** How long shutdown tries to empty the outbox (default 5 s). */
  flushTimeoutMs?: number | undefined;
  /** Directories of settled jobs older than this are removed, at start and every `pruneIntervalMs` (default 7 days). */
  jobRetentionMs?: number | undefined;
  /** How often a running agent removes what `jobRetentionMs` let go (default 1 h; tests shorten it). */
  pruneIntervalMs?: number | undefined;
  /** `--postpone-optional`: optional releases are postponed, forced ones installed (default false). */
  postponeOptional?: boolean | undefined;
  /** `--deploy-poll-interval`: how often the signed desired manifest is checked (default 5 min). */
  deployPollIntervalMs?: number | undefined;
  /**
   * `--min-download-speed`, `DROVER_AGENT_MIN_DOWNLOAD_SPEED`: a download (artifact, input file)
   * slower than this many bytes per second over the window is given up (default 1024; 0: never).
   */
  minDownloadSpeed?: number | undefined;
  /** The window of the minimum download speed (default 60 s; tests shorten it). */
  downloadSpeedWindowMs?: number | undefined;
  /**
   * `--label`, `DROVER_AGENT_LABELS` (agent-labels.ts): the labels reported to the coordinator at
   * every connect; `os` and `arch` are always added (default: only those).
   */
  labels?: Labels | undefined;
  logger: Logger;
  /** The secrets file as the daemon reads it (default: a reader of `<state-dir>/secrets.yaml`). */
  secrets?: KnownSecrets;
  /** `--metrics-file`: the counters in the Prometheus text format, for node_exporter (docs/metrics.md). */
  metricsFile?: string | undefined;
  /**
   * `--no-self-update` (false), env `DROVER_AGENT_SELF_UPDATE`: whether the single binary offers
   * the built-in update workflow `drover-agent-update` (default true; docs/agent.md, "Self-update").
   */
  selfUpdate?: boolean | undefined;
  /** What set `selfUpdate`, named in the log line when it is off (default `--no-self-update`). */
  selfUpdateSource?: string | undefined;
  /** `--self-update-deadline`: how long a new binary has to connect before the previous one is put back (default 120 s). */
  selfUpdateDeadlineMs?: number | undefined;
  /** The running single executable (default: `process.execPath` when running as one, else none: no self-update). */
  executable?: string | null | undefined;
}

export type ResolvedDaemonOptions = Required<
  Omit<DaemonOptions, 'defaultJobTimeoutMs' | 'metricsFile' | 'executable'>
> & {
  defaultJobTimeoutMs: number | null;
  metricsFile?: string;
  executable: string | null;
};

export function resolveDaemonOptions(options: DaemonOptions): ResolvedDaemonOptions {
  const stateDir = path.resolve(options.stateDir);
  return {
    ...options,
    stateDir,
    workflowsDir: path.resolve(options.workflowsDir ?? path.join(stateDir, 'workflows')),
    queueCapacity: options.queueCapacity ?? DEFAULTS.queueCapacity,
    shutdownGraceMs: options.shutdownGraceMs ?? DEFAULTS.shutdownGraceMs,
    defaultJobTimeoutMs:
      options.defaultJobTimeoutMs === undefined ? DEFAULTS.defaultJobTimeoutMs : options.defaultJobTimeoutMs,
    killGraceMs: options.killGraceMs ?? DEFAULTS.killGraceMs,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? DEFAULTS.streamIdleTimeoutMs,
    flushTimeoutMs: options.flushTimeoutMs ?? DEFAULTS.flushTimeoutMs,
    jobRetentionMs: options.jobRetentionMs ?? DEFAULTS.jobRetentionMs,
    pruneIntervalMs: options.pruneIntervalMs ?? PRUNE_INTERVAL_MS,
    postponeOptional: options.postponeOptional ?? DEFAULTS.postponeOptional,
    deployPollIntervalMs: options.deployPollIntervalMs ?? DEFAULTS.deployPollIntervalMs,
    minDownloadSpeed: options.minDownloadSpeed ?? DEFAULTS.minDownloadSpeed,
    downloadSpeedWindowMs: options.downloadSpeedWindowMs ?? DOWNLOAD_SPEED_WINDOW_MS,
    labels: { ...options.labels, ...builtInLabels() },
    secrets: options.secrets ?? new KnownSecrets(stateDir),
    selfUpdate: options.selfUpdate ?? DEFAULTS.selfUpdate,
    selfUpdateSource: options.selfUpdateSource ?? '--no-self-update',
    selfUpdateDeadlineMs: options.selfUpdateDeadlineMs ?? DEFAULTS.selfUpdateDeadlineMs,
    executable: options.executable === undefined ? singleExecutable() : options.executable,
    ...(options.metricsFile ? { metricsFile: path.resolve(options.metricsFile) } : {}),
  };
}

/** The path of the running single executable, or null when the agent runs on a `node` (no self-update). */
function singleExecutable(): string | null {
  return isSea() ? process.execPath : null;
}
