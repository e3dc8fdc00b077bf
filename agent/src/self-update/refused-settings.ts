import { acquireDaemonLock } from '../daemon/lock.js';
import { AGENT_VERSION } from '../version.js';
import { restorePrevious } from './binary-swap.js';
import { RESTART_EXIT_CODE } from './builtin-workflow.js';
import { peekMarker, writeMarker, type SelfUpdateMarker } from './marker.js';

/**
 * A new binary on trial that refuses this machine's settings (a flag of the unit, a value of
 * /etc/drover/agent.env that an earlier version took) stops before its daemon reads the marker,
 * with exit status 2, which the unit does not restart: its deadline would never pass, and the
 * machine would be left without a running agent. Puts the previous binary back (as the deadline's
 * rollback does) and marks the marker `rolled_back` with the refusal, so that the previous one,
 * started next, fails the update job saying why. Returns the line to print, or null when no update
 * to this version is on trial, or another agent runs with the state directory (the binary on
 * trial, with a mistyped command run by hand beside it): nothing is changed then.
 */
export function rollBackRefusedSettings(stateDir: string, problem: string, version = AGENT_VERSION): string | null {
  let read: ReturnType<typeof peekMarker>;
  try {
    read = peekMarker(stateDir);
  } catch {
    return null; // unreadable: the daemon says why, once the settings are fixed
  }
  if (read === null || 'damaged' in read || read.phase !== 'swapped' || read.toVersion !== version) return null;
  let release: () => void;
  try {
    release = acquireDaemonLock(stateDir);
  } catch {
    return null;
  }
  try {
    return rollBack(stateDir, read, `${version} refused this machine's settings: ${problem}`);
  } finally {
    release();
  }
}

function rollBack(stateDir: string, read: SelfUpdateMarker, reason: string): string {
  const version = read.toVersion;
  try {
    restorePrevious(read.previous, read.executable);
  } catch (error) {
    return (
      `self-update: ${version} refused this machine's settings and ${read.previous} cannot be put back ` +
      `(${(error as Error).message}): put the previous binary back by hand, or fix the setting`
    );
  }
  try {
    writeMarker(stateDir, { ...read, phase: 'rolled_back', reason });
  } catch {
    // The previous binary finds the marker still `swapped` and fails the job all the same.
  }
  return (
    `self-update to ${version} rolled back: ${reason}; ${read.fromVersion} was put back from ${read.previous}; ` +
    `restarting (exit code ${RESTART_EXIT_CODE})`
  );
}
