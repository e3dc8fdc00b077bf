import fs from 'node:fs';
import path from 'node:path';
import type { WorkflowStep } from '@drover/shared';
import { LineSplitter } from './line-splitter.js';
import type { Masker } from './secret-masker.js';
import { signalProcessGroup, terminateProcessGroup, trackProcessGroup } from './process-group.js';
import { spawnStep, startRefusal, type HeldStep, type StepCommand, type StepLauncher } from './step-launcher.js';

export type StepStream = 'stdout' | 'stderr';

/**
 * Whether what the steps wrote is still on its way (to the coordinator): while it is, the step's
 * output is not read, so a step that writes faster than it is sent waits on its pipe, as it would
 * on a slow terminal, instead of the agent holding it all in memory.
 */
export interface OutputPressure {
  readonly backlogged: boolean;
  /** Resolves once enough of it went (at once when nothing waits). */
  drained(): Promise<void>;
}

export interface StepRun {
  step: WorkflowStep;
  /** The job's workspace: the default working directory, and the base of a relative `cwd`. */
  workspace: string;
  /** The job's variables; the step's `env` goes on top. */
  env: Record<string, string>;
  /** Kill the step after this many ms (null: no limit). */
  timeoutMs: number | null;
  /** Aborting it kills the step (a cancel, a shutdown). */
  signal: AbortSignal;
  /**
   * Each line the step writes, as written (the caller masks secrets); a line longer than 64 KiB
   * comes in pieces, cut outside the values of `secrets`.
   */
  onLine(stream: StepStream, text: string): void;
  /** The secrets the caller masks: long lines are never cut through one. */
  secrets?: Masker;
  /** Holds the reading of the output while it is backlogged (absent: read as it comes). */
  pressure?: OutputPressure | undefined;
  /** Between SIGTERM and SIGKILL to the step's process group (a timeout, leftovers of an ended step). */
  killGraceMs: number;
  /** The same when `signal` stopped the step, read then (absent: `killGraceMs`). */
  stopGraceMs?: (() => number) | undefined;
  /** Called once the step's process exists, with its pid (= its process group id). */
  onSpawn?(pid: number): void;
  /** Starts the step's process (absent: spawned directly). */
  launcher?: StepLauncher | undefined;
  /** The step's process, held ready by the launcher (used when its command is this step's). */
  held?: HeldStep | null | undefined;
}

/**
 * How long the output of a stopped step is still read after its group's SIGKILL: what its
 * processes wrote is in their pipes by then; a pipe still open is held by a process outside it.
 */
const OUTPUT_AFTER_KILL_MS = 1000;

export type StepOutcome =
  | { kind: 'exited'; exitCode: number }
  | { kind: 'signaled'; signal: string }
  | { kind: 'spawn_failed'; message: string }
  | { kind: 'timed_out' }
  | { kind: 'cancelled' };

/**
 * Runs one step with execa as the leader of its own process group (spawned detached, or through
 * the launcher's spare, step-launcher.ts), with its output read line by line. A timeout or an
 * abort (a cancel, a shutdown) sends SIGTERM to the whole group, then SIGKILL after the grace:
 * `killGraceMs` for a timeout, `stopGraceMs()` for an abort. When the step's own
 * process exits, whatever it left running in its group is terminated the same way, so that a
 * background child cannot hold the job open.
 */
export async function runStep(run: StepRun): Promise<StepOutcome> {
  const command = stepCommand(run.step, run.workspace, run.env);
  // A held step let go already (its directory checked when it was held) is only taken up here.
  if (!run.held?.went) {
    if (run.signal.aborted) return { kind: 'cancelled' };
    const cwdProblem = workingDirectoryProblem(command.cwd);
    if (cwdProblem !== null) {
      return { kind: 'spawn_failed', message: `could not start: the working directory ${command.cwd} ${cwdProblem}` };
    }
  }
  const subprocess = run.launcher ? run.launcher.launch(command, run.held) : spawnStep(command);

  const untrack = subprocess.pid === undefined ? () => {} : trackProcessGroup(subprocess.pid);
  if (subprocess.pid !== undefined) run.onSpawn?.(subprocess.pid);
  let stopReason: 'timed_out' | 'cancelled' | null = null;
  let exited = false;
  /** Set once the output of the stopped step is no longer waited for (see `stop`). */
  let deaf = false;
  let unheard: NodeJS.Timeout | null = null;
  const stopListening = () => {
    subprocess.stdout?.destroy();
    subprocess.stderr?.destroy();
  };
  const stop = (reason: 'timed_out' | 'cancelled') => {
    if (stopReason || subprocess.pid === undefined) return;
    stopReason = reason;
    const graceMs = reason === 'cancelled' && run.stopGraceMs ? run.stopGraceMs() : run.killGraceMs;
    terminateProcessGroup(subprocess.pid, graceMs);
    // A process that left the group (`setsid`) still holds the step's stdout or stderr when the
    // group is dead: a stopped step must not wait for it, or its timeout, a cancel and the queue
    // behind it would wait as long as it runs. Its output is no longer read once the group had
    // its SIGKILL (and a moment to close its pipes).
    unheard = setTimeout(() => {
      deaf = true;
      if (exited) stopListening();
    }, graceMs + OUTPUT_AFTER_KILL_MS);
  };
  const timer = run.timeoutMs === null ? null : setTimeout(() => stop('timed_out'), run.timeoutMs);
  const onAbort = () => stop('cancelled');
  run.signal.addEventListener('abort', onAbort, { once: true });
  if (run.signal.aborted) onAbort(); // a step let go early, cancelled before it was taken up
  subprocess.once('exit', () => {
    exited = true;
    if (deaf) stopListening(); // it outlived its SIGKILL (a process stuck in the kernel)
    // The leader is gone; clean up what it left in its group (nothing happens when nothing is left).
    if (!stopReason && subprocess.pid !== undefined) terminateProcessGroup(subprocess.pid, run.killGraceMs);
  });

  for (const stream of ['stdout', 'stderr'] as const) {
    const readable = subprocess[stream];
    if (!readable) continue;
    const splitter = new LineSplitter((line) => run.onLine(stream, line), run.secrets ? { secrets: run.secrets } : {});
    readable.on('data', (chunk: Buffer) => {
      splitter.push(chunk);
      const pressure = run.pressure;
      if (pressure?.backlogged && !readable.isPaused()) {
        readable.pause();
        void pressure.drained().then(() => readable.resume());
      }
    });
    readable.once('end', () => splitter.end());
    readable.once('close', () => splitter.end());
  }

  try {
    const result = await subprocess;
    if (stopReason) return { kind: stopReason };
    if (result.exitCode !== undefined && !result.signal) return { kind: 'exited', exitCode: result.exitCode };
    if (result.signal) return { kind: 'signaled', signal: result.signal };
    return { kind: 'spawn_failed', message: spawnFailure(result.code, command, result.originalMessage) };
  } finally {
    if (timer) clearTimeout(timer);
    if (unheard) clearTimeout(unheard);
    run.signal.removeEventListener('abort', onAbort);
    if (!exited && subprocess.pid !== undefined) signalProcessGroup(subprocess.pid, 'SIGKILL');
    untrack();
  }
}

/** What a step runs: its program or command line, in its directory, the job's variables with its own on top. */
export function stepCommand(step: WorkflowStep, workspace: string, env: Record<string, string>): StepCommand {
  return {
    file: step.run,
    args: step.shell ? [] : (step.args ?? []),
    shell: step.shell === true,
    cwd: step.cwd ? path.resolve(workspace, step.cwd) : workspace,
    env: { ...env, ...step.env },
  };
}

/**
 * Why a step cannot start in `dir`, or null: it is missing, not a directory, or not to be entered
 * by the agent's user (which the spawn would report as the program's `permission denied`).
 */
function workingDirectoryProblem(dir: string): string | null {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'does not exist';
    return code === 'EACCES' || code === 'EPERM' ? 'cannot be reached (permission denied)' : `cannot be read (${code})`;
  }
  if (!stat.isDirectory()) return 'is not a directory';
  try {
    fs.accessSync(dir, fs.constants.X_OK);
    return null;
  } catch {
    return 'cannot be entered (permission denied)';
  }
}

function spawnFailure(code: string | undefined, command: StepCommand, message: string | undefined): string {
  const file = command.file;
  // Node's `spawn E2BIG` names no variable, and its refusal of a NUL quotes the whole value.
  const refused = code === 'E2BIG' || code === 'ERR_INVALID_ARG_VALUE' ? startRefusal(command, code === 'E2BIG') : null;
  if (refused !== null) return `could not start \`${file}\`: ${refused}`;
  if (code === 'ENOENT') {
    // `run: sleep 30` names a program called "sleep 30".
    const hint = /\s/.test(file.trim()) ? ' (to pass arguments, list them under `args`, or set `shell: true`)' : '';
    return `could not start \`${file}\`: command not found${hint}`;
  }
  if (code === 'EACCES') return `could not start \`${file}\`: permission denied`;
  return `could not start \`${file}\`: ${message ?? code ?? 'unknown error'}`;
}
