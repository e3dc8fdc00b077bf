import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { WorkflowDefinition } from '@drover/shared';
import type { DeployApi } from '../deploy/deploy-api.js';
import { reportDeployState } from '../deploy/deploy-report.js';
import type { DeployStateStore, InstalledRelease } from '../deploy/deploy-state.js';
import { formatDuration } from '../exec/durations.js';
import { failedResult, type JobResult } from '../exec/run-workflow.js';
import type { Masker } from '../exec/secret-masker.js';
import { describeFileError } from '../state/files.js';
import {
  checkBinaryVersion,
  keepPrevious,
  previousPath,
  replaceExecutable,
  restorePrevious,
  stageBinary,
  stagedPath,
} from './binary-swap.js';
import { RESTART_EXIT_CODE, SELF_UPDATE_WORKFLOW, selfUpdateWorkflow } from './builtin-workflow.js';
import { clearMarker, markerPath, readMarker, writeMarker, type SelfUpdateMarker } from './marker.js';

/** An update job that the agent stopped for: the binary that starts next reports its result. */
export const HANDED_OVER = Symbol('handed over to the next binary');
export type HandedOver = typeof HANDED_OVER;

export interface SelfUpdateOptions {
  stateDir: string;
  logger: Logger;
  /** The running single executable (`process.execPath`). */
  executable: string;
  /** The running agent's version. */
  version: string;
  /** `--self-update` (the default) or `--no-self-update`: whether the built-in workflow is offered. */
  enabled: boolean;
  /** `--self-update-deadline`: how long a new binary has to connect before the previous one is put back. */
  deadlineMs: number;
  /** Stops the agent, which then exits with RESTART_EXIT_CODE (the service manager starts it again). */
  restart(reason: string): void;
  /** Why the stream is not connected now (for the rollback's log line). */
  lastError?(): string | null;
  now?(): number;
}

/** What one installation needs from the update job (run-deploy-job.ts). */
export interface SelfInstallRequest {
  jobId: string;
  applicationId: string;
  release: InstalledRelease;
  /** The downloaded artifact, verified against the signed manifest's size and SHA-256. */
  artifactPath: string;
  /** A line of the job's log (and the agent's). */
  say(text: string): void;
}

/** What the agent's other parts give the self-update once they exist (daemon.ts). */
export interface SelfUpdateParts {
  /** Finishes a job left `running` in the journal, and reports it (JobManager.finishJob). */
  finishJob(jobId: string, result: JobResult): void;
  deploy: { api: DeployApi; store: DeployStateStore; masker?: (() => Masker) | undefined };
}

/**
 * The agent updating its own binary over the air (docs/agent.md, "Self-update"). The old binary
 * (`install`, run by the update job once the artifact is verified) checks that the new binary
 * runs, writes the marker, keeps itself as `<executable>.previous`, renames the new one over the
 * executable and stops with RESTART_EXIT_CODE. The binary that starts next (`resume`, before the
 * journal is recovered) settles the update: the new one, on trial, reports the job's success
 * once its stream opens (`connected`), or puts the previous binary back when it has not connected
 * within the deadline (counted from its first start, across crashes); the previous one, started
 * again, reports the failure.
 */
export class SelfUpdate {
  readonly #options: SelfUpdateOptions;
  readonly #log: Logger;
  #parts: SelfUpdateParts | null = null;
  #trial: SelfUpdateMarker | null = null;
  #timer: NodeJS.Timeout | null = null;
  #settled = false;
  /** The rollback could not put the previous binary back: the new one runs on, confirmed if it connects. */
  #stuck = false;

  constructor(options: SelfUpdateOptions) {
    this.#options = options;
    this.#log = options.logger.child({ selfUpdate: true });
  }

  /** The built-in workflow to report with the workflow files; none with `--no-self-update`. */
  get workflows(): WorkflowDefinition[] {
    return this.#options.enabled ? [selfUpdateWorkflow(this.#options.deadlineMs)] : [];
  }

  /** Whether an update job of this workflow is installed by the agent itself. */
  handles(workflowName: string): boolean {
    return this.#options.enabled && workflowName === SELF_UPDATE_WORKFLOW;
  }

  /**
   * Installs the verified artifact as the agent's binary. A failure (the new binary does not run,
   * the executable's directory cannot be written) is the job's failed result, nothing changed; a
   * new binary of the running version needs nothing (success); otherwise the binary is swapped, the
   * agent restarts and HANDED_OVER says that the job's result comes from the binary that starts next.
   */
  async install(req: SelfInstallRequest): Promise<JobResult | HandedOver> {
    const { executable, version, stateDir, deadlineMs } = this.#options;
    const staged = stagedPath(executable);
    const fail = (message: string) => {
      removeQuietly(staged);
      return failedResult(`self-update not installed: ${message}; ${version} keeps running`);
    };
    const bytes = sizeOf(req.artifactPath);
    try {
      await stageBinary(req.artifactPath, executable);
    } catch (error) {
      return fail(stagingProblem(error, executable, bytes));
    }
    req.say(`self-update: checking the new binary: ${staged} --version`);
    const checked = await checkBinaryVersion(staged);
    if (!checked.ok) return fail(checked.problem);
    req.say(`self-update: the new binary answers ${checked.line}`);
    if (checked.version === version) {
      removeQuietly(staged);
      req.say(`self-update: ${version} runs already; nothing to swap`);
      return {
        status: 'success',
        exitCode: 0,
        errorMessage: null,
        output: { agentVersion: version },
        finishedAt: now(),
      };
    }
    const marker: SelfUpdateMarker = {
      version: 1,
      phase: 'swapped',
      jobId: req.jobId,
      applicationId: req.applicationId,
      release: req.release,
      executable,
      previous: '',
      fromVersion: version,
      toVersion: checked.version,
      deadlineMs,
      swappedAt: now(),
      firstStartAt: null,
      starts: 0,
      reason: null,
    };
    try {
      marker.previous = keepPrevious(executable);
      // On disk before the swap: whichever binary starts next knows what happened.
      writeMarker(stateDir, marker);
      replaceExecutable(staged, executable);
    } catch (error) {
      removeQuietly(markerPath(stateDir));
      return fail(`cannot swap the binary (${(error as Error).message})`);
    }
    const restart =
      `self-update: ${version} kept as ${marker.previous}; ${executable} is now ${checked.version}; ` +
      `restarting (exit code ${RESTART_EXIT_CODE}: the service manager starts the new binary, which must connect within ${formatDuration(deadlineMs)})`;
    req.say(restart);
    this.#options.restart(`self-update to ${checked.version}`);
    return HANDED_OVER;
  }

  /**
   * At start, before the journal is recovered: settles an update the marker says is in flight.
   * Returns the ids of the jobs it takes care of (the journal's recovery leaves them alone).
   * Without a marker, removes the `<executable>.new` of an install that was stopped (kill -9,
   * power cut) before it wrote the marker: while staging or checking `--version`.
   */
  resume(parts: SelfUpdateParts): Set<string> {
    this.#parts = parts;
    const read = readMarker(this.#options.stateDir);
    if (read === null) {
      this.#removeUnswapped();
      return new Set();
    }
    if ('damaged' in read) {
      this.#log.error(`skipped a damaged file: ${markerPath(this.#options.stateDir)} (${read.damaged})`);
      return new Set();
    }
    const marker = read;
    const { version } = this.#options;
    const adopted = new Set([marker.jobId]);
    removeQuietly(stagedPath(marker.executable));
    if (marker.phase === 'rolled_back') {
      this.#log.warn(
        `self-update to ${marker.toVersion} failed and was rolled back: ${marker.reason}; running ${version} again`,
      );
      this.#fail(marker, `rolled back to ${marker.fromVersion}: ${marker.reason}`);
      return adopted;
    }
    if (version === marker.toVersion) {
      this.#startTrial(marker);
      return adopted;
    }
    const message =
      version !== marker.fromVersion
        ? `the agent started as ${version}, neither ${marker.fromVersion} nor ${marker.toVersion} (the binary was replaced by other means)`
        : marker.starts > 0
          ? `the agent started as ${version} again after ${marker.toVersion} had started ${marker.starts} time${marker.starts === 1 ? '' : 's'}: it was put back (rolled back without its reason recorded, a full disk say, or by hand)`
          : `the agent started as ${version} again before ${marker.toVersion} was in place (it stopped during the swap)`;
    this.#log.warn(`self-update to ${marker.toVersion} given up: ${message}`);
    this.#fail(marker, message);
    return adopted;
  }

  /** The stream opened: a new binary on trial is confirmed. */
  connected(): void {
    const marker = this.#trial;
    if (!marker || this.#settled) return;
    this.#settled = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#trial = null;
    const parts = this.#parts!;
    const { version } = this.#options;
    parts.finishJob(marker.jobId, {
      status: 'success',
      exitCode: 0,
      errorMessage: null,
      output: { agentVersion: version, previousVersion: marker.fromVersion },
      finishedAt: now(),
    });
    this.#remember(marker.applicationId, { current: marker.release, postponed: null, lastFailure: null });
    void reportDeployState(parts.deploy, this.#log, marker.applicationId, 'installed');
    this.#clear();
    this.#log.info(
      this.#stuck
        ? `self-update to ${version} confirmed: connected to the coordinator after its deadline, ${marker.fromVersion} not being there to put back (${marker.previous})`
        : `self-update to ${version} confirmed: connected to the coordinator; ${marker.fromVersion} is kept as ${marker.previous}`,
    );
  }

  /** Stops the trial's timer (the daemon stops). */
  close(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #startTrial(marker: SelfUpdateMarker): void {
    const started = this.#now();
    const firstStart = marker.firstStartAt === null ? started : Date.parse(marker.firstStartAt);
    const trial: SelfUpdateMarker = {
      ...marker,
      firstStartAt: new Date(firstStart).toISOString(),
      starts: marker.starts + 1,
    };
    const left = firstStart + marker.deadlineMs - started;
    const deadline = formatDuration(marker.deadlineMs);
    if (left <= 0) {
      this.#rollback(
        trial,
        `it did not connect to the coordinator within ${deadline} of its first start (${trial.starts} start${trial.starts === 1 ? '' : 's'})`,
      );
      return;
    }
    try {
      writeMarker(this.#options.stateDir, trial);
    } catch (error) {
      this.#log.error({ err: error }, `cannot update ${markerPath(this.#options.stateDir)}`);
    }
    this.#trial = trial;
    this.#log.info(
      `self-update: running ${marker.toVersion} on trial (start ${trial.starts}): it must connect to the coordinator within ${formatDuration(left)}, else ${marker.fromVersion} is put back from ${marker.previous}`,
    );
    this.#timer = setTimeout(() => {
      if (this.#settled) return;
      const last = this.#options.lastError?.();
      this.#rollback(
        trial,
        `it did not connect to the coordinator within ${deadline}${last ? ` (last error: ${last})` : ''}`,
      );
    }, left);
    this.#timer.unref();
  }

  /**
   * Puts the previous binary back and restarts into it; it reports the failure. When it cannot be
   * put back (`.previous` removed), the new binary is what runs: it stays on trial with no deadline,
   * so that connecting confirms it (the job ends, the marker goes); each start tries the rollback again.
   */
  #rollback(marker: SelfUpdateMarker, reason: string): void {
    this.#settled = true;
    this.#trial = null;
    this.#log.error(
      `self-update to ${marker.toVersion} rolled back: ${reason}; putting ${marker.fromVersion} back from ${marker.previous} and restarting`,
    );
    try {
      restorePrevious(marker.previous, marker.executable);
    } catch (error) {
      this.#log.fatal(
        { err: error },
        `self-update: cannot put ${marker.previous} back as ${marker.executable} (${(error as Error).message}); ` +
          `${marker.toVersion} keeps running, and is confirmed if it connects: put the previous binary back by hand to go back`,
      );
      this.#settled = false;
      this.#stuck = true;
      this.#trial = marker;
      return;
    }
    // The previous binary is in place: whatever happens to the marker now, this one must not go on
    // to be confirmed (the job would end `success` and `installed` be reported while the
    // executable is the previous version). Unrecorded (a full disk), the previous binary finds the
    // marker still `swapped` and fails the job all the same, without the reason.
    try {
      writeMarker(this.#options.stateDir, { ...marker, phase: 'rolled_back', reason });
    } catch (error) {
      this.#log.error(
        { err: error },
        `self-update: ${marker.fromVersion} is back, but the rollback's reason cannot be recorded (${(error as Error).message}); ` +
          `${marker.fromVersion} reports the update failed all the same`,
      );
    }
    this.#options.restart(`rollback to ${marker.fromVersion}`);
  }

  /** The update job ends failed (the coordinator counts the failure); the deployment state says why. */
  #fail(marker: SelfUpdateMarker, reason: string): void {
    const message = `self-update to ${marker.toVersion} failed: ${reason}`;
    this.#parts!.finishJob(marker.jobId, { ...failedResult(message), output: { agentVersion: this.#options.version } });
    this.#remember(marker.applicationId, {
      lastFailure: { releaseId: marker.release.releaseId, state: 'failed', error: message, at: now() },
    });
    void reportDeployState(this.#parts!.deploy, this.#log, marker.applicationId, 'failed', message);
    this.#clear();
  }

  /**
   * The marker is written after staging and the `--version` check, so a `<executable>.new` found
   * without one was never swapped in, and nothing else removes it (about 105 MB). Staging writes
   * no other file (the copy across file systems goes straight to `.new`). Only that name, and only
   * a file or a link (a directory in the way is left as it is): never the executable or `.previous`.
   */
  #removeUnswapped(): void {
    const { executable } = this.#options;
    const staged = path.resolve(stagedPath(executable));
    if (staged === path.resolve(executable) || staged === path.resolve(previousPath(executable))) return;
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(staged);
    } catch {
      return; // none (or the directory cannot be read): nothing to do
    }
    if (!stat.isFile() && !stat.isSymbolicLink()) return;
    const name = path.basename(staged);
    try {
      fs.rmSync(staged, { force: true });
    } catch (error) {
      this.#log.warn(
        `self-update: cannot remove ${staged}, left by a self-update that was stopped before it swapped (${(error as Error).message}); remove it by hand`,
      );
      return;
    }
    this.#log.warn(
      `self-update: removed ${name}, left by a self-update that was stopped before it swapped (${staged}); ${executable} was not changed`,
    );
  }

  #remember(applicationId: string, patch: Parameters<DeployStateStore['update']>[1]): void {
    try {
      this.#parts!.deploy.store.update(applicationId, patch);
    } catch (error) {
      this.#log.error({ err: error }, `cannot write deploy/state.json: ${(error as Error).message}`);
    }
  }

  #clear(): void {
    try {
      clearMarker(this.#options.stateDir);
    } catch (error) {
      this.#log.error({ err: error }, `cannot remove ${markerPath(this.#options.stateDir)}`);
    }
  }

  #now(): number {
    return this.#options.now?.() ?? Date.now();
  }
}

const now = () => new Date().toISOString();

/**
 * Why the new binary could not be written beside the executable. Only a permission is the
 * directory's owner to fix: a full disk, a quota, a read-only or failing file system said as that
 * one sent the technician to `chown` a directory that is fine.
 */
export function stagingProblem(error: unknown, executable: string, bytes: number | null = null): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  const where = `cannot write the new binary beside ${executable}`;
  const message = (error as Error)?.message ?? String(error);
  if (code === 'EACCES' || code === 'EPERM') {
    return `${where} (${message}); the agent's user must be allowed to write to that directory`;
  }
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    const needs = bytes === null ? '' : `; it takes ${Math.ceil(bytes / (1024 * 1024))} MiB there`;
    return `${where}: ${describeFileError(error, path.dirname(executable))}${needs}`;
  }
  if (code === 'EROFS' || code === 'EIO') return `${where}: ${describeFileError(error, path.dirname(executable))}`;
  return `${where} (${message})`;
}

function sizeOf(file: string): number | null {
  try {
    return fs.statSync(file).size;
  } catch {
    return null;
  }
}

/** Removes a file left behind; one that cannot be removed stays (it is replaced at the next attempt). */
function removeQuietly(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    // a directory in the way, a read-only directory: nothing to undo
  }
}
