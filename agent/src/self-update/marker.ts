import fs from 'node:fs';
import path from 'node:path';
import type { InstalledRelease } from '../deploy/deploy-state.js';
import { readFileIfExists, syncDir, writeFileAtomic } from '../state/files.js';
import { isObject } from '../util/is-object.js';

/**
 * `<state-dir>/self-update.json`: a self-update in flight, written before the new binary is put
 * in place and removed once it is settled (confirmed, or rolled back and reported). Whichever
 * binary starts next reads it (docs/agent.md, "Self-update").
 */
export interface SelfUpdateMarker {
  version: 1;
  /** `swapped`: the new binary is (or is about to be) in place, on trial; `rolled_back`: the previous one is back. */
  phase: 'swapped' | 'rolled_back';
  /** The update job, finished by the binary that settles the update. */
  jobId: string;
  applicationId: string;
  release: InstalledRelease;
  /** The executable the service manager starts. */
  executable: string;
  /** The binary that ran before, kept for the rollback. */
  previous: string;
  fromVersion: string;
  toVersion: string;
  /** How long the new binary has to connect, from its first start. */
  deadlineMs: number;
  swappedAt: string;
  /** The new binary's first start (null: not started yet). */
  firstStartAt: string | null;
  /** Starts of the new binary so far. */
  starts: number;
  /** Why it was rolled back (phase `rolled_back`). */
  reason: string | null;
}

export const MARKER_FILE = 'self-update.json';

export function markerPath(stateDir: string): string {
  return path.join(stateDir, MARKER_FILE);
}

/** Written atomically and flushed: it must be on disk before the binary is swapped. */
export function writeMarker(stateDir: string, marker: SelfUpdateMarker): void {
  writeFileAtomic(markerPath(stateDir), `${JSON.stringify(marker, null, 2)}\n`);
}

export function clearMarker(stateDir: string): void {
  fs.rmSync(markerPath(stateDir), { force: true });
  syncDir(stateDir);
}

/**
 * The marker, null when there is none, or why it cannot be used (it is then renamed
 * `self-update.json.damaged`, so that it is reported once; when it cannot be, a read-only file
 * system say, it stays, and is reported at each start).
 */
export function readMarker(stateDir: string): SelfUpdateMarker | null | { damaged: string } {
  const read = peekMarker(stateDir);
  if (read === null || !('damaged' in read)) return read;
  try {
    fs.renameSync(markerPath(stateDir), `${markerPath(stateDir)}.damaged`);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    return {
      damaged: `${read.damaged}; it cannot be renamed ${MARKER_FILE}.damaged (${code}), so it stays, skipped at each start: remove it`,
    };
  }
  return read;
}

/** The marker as readMarker reads it, leaving the file as it is (`drover-agent status`). */
export function peekMarker(stateDir: string): SelfUpdateMarker | null | { damaged: string } {
  const text = readFileIfExists(markerPath(stateDir));
  if (text === null) return null;
  const problem = markerProblem(text);
  return problem === null ? (JSON.parse(text) as SelfUpdateMarker) : { damaged: problem };
}

/**
 * A self-update in flight, in words, for `drover-agent status`. A damaged marker is renamed aside
 * by the daemon as it starts (readMarker): one still there while the daemon runs could not be.
 */
export function describeMarker(read: SelfUpdateMarker | { damaged: string }, daemonRunning = false): string {
  if ('damaged' in read) {
    return daemonRunning
      ? `${MARKER_FILE} is damaged (${read.damaged}); the running agent skips it but could not rename it ${MARKER_FILE}.damaged (its log says why): remove it`
      : `${MARKER_FILE} is damaged (${read.damaged}); the agent renames it ${MARKER_FILE}.damaged at its next start, or, if it cannot, skips it at each start: then remove it`;
  }
  const { fromVersion: from, toVersion: to } = read;
  if (read.phase === 'rolled_back') return `${to} rolled back to ${from} (${read.reason}); reported at the next start`;
  const deadline = `${Math.round(read.deadlineMs / 1000)}s`;
  if (read.firstStartAt === null)
    return `${from} -> ${to}, swapped at ${read.swappedAt}; ${to} must connect within ${deadline} of its first start, else ${from} is put back`;
  const by = new Date(Date.parse(read.firstStartAt) + read.deadlineMs).toISOString();
  return `${to} on trial since ${read.firstStartAt} (start ${read.starts}): it must connect by ${by}, else ${from} is put back from ${read.previous}`;
}

function markerProblem(text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `not JSON (${(error as Error).message})`;
  }
  if (!isObject(value) || value.version !== 1) return 'not a self-update marker of version 1';
  const strings = ['jobId', 'applicationId', 'executable', 'previous', 'fromVersion', 'toVersion', 'swappedAt'];
  for (const key of strings) if (typeof value[key] !== 'string') return `${key}: expected a string`;
  if (value.phase !== 'swapped' && value.phase !== 'rolled_back') return 'phase: expected swapped or rolled_back';
  const release = value.release;
  if (
    !isObject(release) ||
    typeof release.releaseId !== 'string' ||
    typeof release.version !== 'string' ||
    typeof release.sequence !== 'number'
  )
    return 'release: expected {releaseId, version, sequence}';
  if (!Number.isFinite(value.deadlineMs) || (value.deadlineMs as number) <= 0)
    return 'deadlineMs: expected a positive number';
  if (!Number.isSafeInteger(value.starts) || (value.starts as number) < 0)
    return 'starts: expected a whole number from 0';
  // The trial's clock is read from these: a date that does not parse would stop every start.
  if (Number.isNaN(Date.parse(value.swappedAt as string))) return 'swappedAt: expected a date';
  if (
    value.firstStartAt !== null &&
    (typeof value.firstStartAt !== 'string' || Number.isNaN(Date.parse(value.firstStartAt)))
  )
    return 'firstStartAt: expected a date or null';
  return null;
}
