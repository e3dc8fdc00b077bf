import path from 'node:path';
import { isProcessRunning, lockHolderPid } from '@drover/shared';
import { LOCK_FILE } from '../daemon/lock.js';
import { readStateFile } from '../state/files.js';

/** The daemon's status file in the state directory, rewritten (atomically) on every change. */
export const DAEMON_STATUS_FILE = 'status.json';

/**
 * `<state-dir>/status.json` as `drover-agent run` writes it (daemon-status-writer.ts) and
 * `drover-agent status` reads it (agent-status.ts).
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
  /**
   * How the daemon reaches the coordinator: `http://user:***@proxy:3128 (from HTTPS_PROXY)`,
   * `no proxy (NO_PROXY matches ...)` or `direct` (absent when written by an older agent).
   */
  proxy?: string;
  /** The labels the agent reports and how the coordinator took them (absent when written by an older agent). */
  labels?: LabelStatus;
  updatedAt: string;
}

/**
 * The labels in `status.json`: those this agent reports of itself (`--label`,
 * `DROVER_AGENT_LABELS`, `os`, `arch`), and the coordinator's answer at the last connect.
 */
export interface LabelStatus {
  reported: Record<string, string>;
  /**
   * `pending`: not taken yet (not connected yet, or the last attempt failed); `accepted`;
   * `refused` (422, `problem` says why); `unsupported`: the coordinator has no labels (older, 404).
   */
  state: 'pending' | 'accepted' | 'refused' | 'unsupported';
  /** The agent's labels on the coordinator (an operator's label wins a clash), once accepted. */
  effective: Record<string, string> | null;
  problem: string | null;
}

/**
 * The daemon's last status and whether its process is alive. A missing or unreadable file is
 * "not running"; a file left behind by a daemon that died is returned with `running: false`.
 * Alive means holding `daemon.lock`, which tells the daemon's process apart from a later one given
 * the same pid (its start time): a daemon killed (kill -9, the OOM killer, a power cut) leaves its
 * status.json, and its pid is soon another process's, after a reboot above all.
 */
export function readDaemonStatus(stateDir: string): { status: DaemonStatus | null; running: boolean } {
  let status: DaemonStatus | null = null;
  try {
    const value = JSON.parse(readStateFile(path.join(stateDir, DAEMON_STATUS_FILE))) as unknown;
    if (isDaemonStatus(value)) status = value;
  } catch {
    status = null;
  }
  const running = status !== null && lockHolderPid(path.join(stateDir, LOCK_FILE)) === status.pid;
  return { status, running };
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
