import { readStateFile } from '../state/files.js';
import path from 'node:path';

/** The agent's counters in its state directory (docs/metrics.md, "Agent counters"). */
export const COUNTERS_FILE = 'counters.json';

/**
 * What this agent did since `since` (the first start of a daemon on this state directory): kept
 * across restarts in `counters.json`, shown by `drover-agent status`, written for node_exporter
 * with `run --metrics-file`.
 */
export interface AgentCounters {
  since: string;
  /** Jobs and update jobs run to an end, whatever the result. */
  jobsRun: number;
  /** Of those, the ones that ended `failed` or `timed_out`. */
  jobsFailed: number;
  /** Jobs refused (queue full, unknown workflow, params refused, shutting down). */
  jobsRejected: number;
  /** Times the stream was opened again after it had been open. */
  reconnects: number;
  /** File bytes downloaded (input files, release artifacts) and uploaded (output files). */
  bytesDownloaded: number;
  bytesUploaded: number;
}

export type CounterName = Exclude<keyof AgentCounters, 'since'>;

export const COUNTER_NAMES: readonly CounterName[] = [
  'jobsRun',
  'jobsFailed',
  'jobsRejected',
  'reconnects',
  'bytesDownloaded',
  'bytesUploaded',
];

export function zeroCounters(since: string): AgentCounters {
  return {
    since,
    jobsRun: 0,
    jobsFailed: 0,
    jobsRejected: 0,
    reconnects: 0,
    bytesDownloaded: 0,
    bytesUploaded: 0,
  };
}

/** The counters the state directory holds, or null (none yet, or a file that is not counters). */
export function readCounters(stateDir: string): AgentCounters | null {
  const read = readCountersFile(stateDir);
  return 'counters' in read ? read.counters : null;
}

/**
 * The counters of `counters.json`: null when there is none yet, else why the file is damaged
 * (`damaged`), which the daemon logs before it starts again from zero.
 */
export function readCountersFile(stateDir: string): { counters: AgentCounters | null } | { damaged: string } {
  let text: string;
  try {
    text = readStateFile(path.join(stateDir, COUNTERS_FILE));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { counters: null };
    return { damaged: `cannot read it: ${code === 'EINVAL' ? (error as Error).message : (code ?? String(error))}` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { damaged: 'not JSON' };
  }
  if (typeof value !== 'object' || value === null) return { damaged: 'not an object' };
  const v = value as Record<string, unknown>;
  if (typeof v.since !== 'string' || Number.isNaN(Date.parse(v.since))) return { damaged: '`since` is not a time' };
  const counters = zeroCounters(v.since);
  for (const name of COUNTER_NAMES) {
    const n = v[name];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0)
      return { damaged: `\`${name}\` is not a whole number` };
    counters[name] = n;
  }
  return { counters };
}

/** The counters in the Prometheus text format, for node_exporter's textfile collector. */
export function countersAsPrometheus(c: AgentCounters): string {
  const series = (name: string, type: string, help: string, lines: string[]) =>
    [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...lines].join('\n');
  return `${[
    series('drover_agent_jobs_run_total', 'counter', 'Jobs and update jobs this agent ran to an end', [
      `drover_agent_jobs_run_total ${c.jobsRun}`,
    ]),
    series('drover_agent_jobs_failed_total', 'counter', 'Jobs run that ended failed or timed_out', [
      `drover_agent_jobs_failed_total ${c.jobsFailed}`,
    ]),
    series('drover_agent_jobs_rejected_total', 'counter', 'Jobs this agent refused', [
      `drover_agent_jobs_rejected_total ${c.jobsRejected}`,
    ]),
    series('drover_agent_stream_reconnects_total', 'counter', 'Times the stream was opened again after being open', [
      `drover_agent_stream_reconnects_total ${c.reconnects}`,
    ]),
    series('drover_agent_transfer_bytes_total', 'counter', 'File bytes moved through presigned URLs', [
      `drover_agent_transfer_bytes_total{direction="download"} ${c.bytesDownloaded}`,
      `drover_agent_transfer_bytes_total{direction="upload"} ${c.bytesUploaded}`,
    ]),
    series('drover_agent_counters_since_seconds', 'gauge', 'When these counts started (Unix seconds)', [
      `drover_agent_counters_since_seconds ${Math.floor(Date.parse(c.since) / 1000)}`,
    ]),
  ].join('\n')}\n`;
}
