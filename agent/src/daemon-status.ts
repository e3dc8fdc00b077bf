import fs from 'node:fs';
import path from 'node:path';
import { formatTime, isProcessRunning, shortId } from '@drover/shared';
import { describeInvalidFiles } from './workflows/format-problem.js';
import { describeOffset, LARGE_OFFSET_MS } from './http/server-clock.js';

/** The daemon's status file in the state directory, rewritten (atomically) on every change. */
export const DAEMON_STATUS_FILE = 'status.json';

/**
 * `<state-dir>/status.json` as `drover-agent run` writes it and
 * `drover-agent status` reads it.
 */
export interface DaemonStatus {
  pid: number;
  startedAt: string;
  version: string;
  connection: 'connecting' | 'connected' | 'disconnected';
  lastConnectedAt: string | null;
  lastError: string | null;
  /** The coordinator's clock minus this machine's, in ms, once measured (absent when written by an older agent). */
  clockOffsetMs?: number | null;
  queue: {
    capacity: number;
    running: { jobId: string; workflowName: string; startedAt: string } | null;
    waiting: { jobId: string; workflowName: string }[];
  };
  workflows: { loaded: number; invalid: { file: string; message: string }[] };
  updatedAt: string;
}

/**
 * The daemon's last status and whether its process is alive. A missing or unreadable file is
 * "not running"; a file left behind by a daemon that died is returned with `running: false`.
 */
export function readDaemonStatus(stateDir: string): { status: DaemonStatus | null; running: boolean } {
  let status: DaemonStatus | null = null;
  try {
    const value = JSON.parse(fs.readFileSync(path.join(stateDir, DAEMON_STATUS_FILE), 'utf8')) as unknown;
    if (isDaemonStatus(value)) status = value;
  } catch {
    status = null;
  }
  return { status, running: status !== null && isAlive(status.pid) };
}

/**
 * Whether a process with this pid is running: it exists (under any user) and is not a zombie, a
 * process that exited and that its parent has not reaped yet (`isProcessRunning`, shared with
 * the daemon lock).
 */
export function isAlive(pid: number): boolean {
  return isProcessRunning(pid);
}

function isDaemonStatus(value: unknown): value is DaemonStatus {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<DaemonStatus>;
  return (
    typeof v.pid === 'number' &&
    typeof v.connection === 'string' &&
    typeof v.queue === 'object' &&
    v.queue !== null &&
    Array.isArray(v.queue.waiting) &&
    typeof v.workflows === 'object' &&
    v.workflows !== null &&
    Array.isArray(v.workflows.invalid)
  );
}

function describeClockLine(offsetMs: number): string {
  if (Math.abs(offsetMs) < 1_000) return "agrees with the coordinator's";
  const note = Math.abs(offsetMs) >= LARGE_OFFSET_MS ? '; set it right (NTP)' : '';
  return `${describeOffset(offsetMs)} the coordinator's (signing with its time${note})`;
}

/** The daemon part of `drover-agent status`, aligned with the enrollment lines. */
export function formatDaemonStatus(status: DaemonStatus | null, running: boolean): string[] {
  if (!status) return ['Agent:         not running (start it with: drover-agent run)'];
  const when = (iso: string | null | undefined) => (iso ? formatTime(iso) : 'never');
  if (!running) {
    return [
      `Agent:         not running (pid ${status.pid} is gone; its last status was written ${when(status.updatedAt)})`,
    ];
  }
  const lines = [
    `Agent:         running (pid ${status.pid}, version ${status.version}, since ${when(status.startedAt)})`,
    `Connection:    ${status.connection}${status.connection === 'connected' ? '' : ` (last connected: ${when(status.lastConnectedAt)})`}`,
  ];
  if (status.lastError) lines.push(`Last error:    ${status.lastError}`);
  if (typeof status.clockOffsetMs === 'number') lines.push(`Clock:         ${describeClockLine(status.clockOffsetMs)}`);
  const q = status.queue;
  lines.push(
    `Queue:         ${q.running ? '1 running' : 'idle'}, ${q.waiting.length} waiting (capacity ${q.capacity})`,
  );
  if (q.running) {
    lines.push(
      `  running:     job ${shortId(q.running.jobId)} ${q.running.workflowName} (started ${when(q.running.startedAt)})`,
    );
  }
  for (const job of q.waiting) lines.push(`  waiting:     job ${shortId(job.jobId)} ${job.workflowName}`);
  const w = status.workflows;
  lines.push(`Workflows:     ${w.loaded} loaded${w.invalid.length ? `, ${describeInvalidFiles(w.invalid)}` : ''}`);
  for (const problem of w.invalid) {
    const text = problem.message.startsWith(`${problem.file}:`)
      ? problem.message
      : `${problem.file}: ${problem.message}`;
    lines.push(`  invalid:     ${text}`);
  }
  if (w.invalid.length) lines.push('               details: drover-agent workflows');
  return lines;
}
