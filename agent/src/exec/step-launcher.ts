import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';

/** A step's process as it is started: what runs, where, with which variables on top of the agent's. */
export interface StepCommand {
  /** The program, or with `shell` the command line for /bin/sh -c. */
  file: string;
  args: string[];
  shell: boolean;
  cwd: string;
  env: Record<string, string>;
}

export type StepProcess = ReturnType<typeof spawnStep> | Spare;
type Spare = ReturnType<typeof spawnSpare>;

const PIPED = {
  detached: true, // leader of its own process group
  cleanup: false,
  stdout: 'pipe',
  stderr: 'pipe',
  buffer: false,
  reject: false,
  windowsHide: true,
} as const;

/** Spawns the step's process with execa: its own process group, stdin from /dev/null, output piped. */
export function spawnStep(command: StepCommand) {
  return execa(command.file, command.args, {
    ...PIPED,
    cwd: command.cwd,
    env: command.env,
    extendEnv: true,
    shell: command.shell ? '/bin/sh' : false,
    stdin: 'ignore',
  });
}

/**
 * The spare's shell: dash, whose handling of the environment the unit tests check (bash, /bin/sh
 * on some systems, would add `SHLVL` and `_` to every step's environment).
 */
const SPARE_SHELL = '/bin/dash';

/** The launcher's spare: dash reading commands from its stdin, with exactly `env`. */
function spawnSpare(env: Record<string, string | undefined>) {
  return execa(SPARE_SHELL, ['-s'], { ...PIPED, cwd: '/', env, extendEnv: false, stdin: 'pipe' });
}

/**
 * Starts steps' processes with the fork already paid. Forking the agent copies its page tables:
 * 2.6 to 4 ms on the reference VM (docs/performance.md), during which its event loop waits. So
 * the launcher forks a spare process ahead of time, while the agent has nothing else to do: a
 * `/bin/dash` reading its commands from a pipe, in its own process group, its output piped. To
 * start a step through it, the agent writes one command line to that pipe; the shell changes to
 * the step's directory, makes its environment exactly what spawnStep would give (the agent's
 * variables with the step's on top), and execs the step's program with stdin from /dev/null.
 * The step keeps the spare's pid and process group.
 *
 * A step goes through spawnStep instead when there is no spare (or no dash on the machine: then
 * every step is spawned), or when the shell could make a difference: its program is not found
 * (spawnStep's error names it), a variable's name is not one a shell can set, or the environment
 * has a variable the shell manages itself (`IFS`, `PPID`...). Until its line comes the spare
 * runs nothing; when the agent ends (or closes the launcher) the pipe closes and the spare exits.
 */
export class StepLauncher {
  #spare: { process: Spare; env: Record<string, string | undefined> } | null = null;
  #closed = !isExecutableFile(SPARE_SHELL);

  /** Forks a spare when there is none (blocks the event loop for the fork: call it when idle). */
  warm(): void {
    if (this.#closed || (this.#spare && isRunning(this.#spare.process))) return;
    const env = { ...process.env };
    const spare = spawnSpare(env);
    if (spare.pid === undefined) return; // the fork failed; steps are spawned directly
    spare.stdin.on('error', () => {}); // EPIPE when the spare is gone
    this.#spare = { process: spare, env };
  }

  /** The step's process: the spare taken for it when it can be, else a new one (spawnStep). */
  launch(command: StepCommand): StepProcess {
    const spare = this.#spare;
    this.#spare = null;
    const line = spare && isRunning(spare.process) ? commandLine(command, spare.env) : null;
    if (!spare || line === null) {
      if (spare) endSpare(spare.process);
      return spawnStep(command);
    }
    spare.process.stdin.end(line);
    return spare.process;
  }

  /** Ends the spare; launch spawns every step from then on. */
  close(): void {
    this.#closed = true;
    if (this.#spare) endSpare(this.#spare.process);
    this.#spare = null;
  }
}

function isRunning(child: StepProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function endSpare(spare: Spare): void {
  spare.stdin.destroy(); // EOF: the shell exits without running anything
}

/** A name `export` and `unset` take. */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Variables the shell itself sets on `cd`: always given their exact value, or unset. */
const SET_BY_CD = ['PWD', 'OLDPWD'];

/** Variables dash resets or drops whatever the environment says: a step with one is spawned. */
const SHELL_OWNED = ['IFS', 'OPTIND', 'PPID', 'LINENO'];

/**
 * The spare's command line for `command`: `cd`, the variables that differ from the spare's own,
 * then `exec` with stdin from /dev/null. Null when the step must be spawned directly.
 */
function commandLine(command: StepCommand, spareEnv: Record<string, string | undefined>): string | null {
  const env: Record<string, string | undefined> = { ...process.env, ...command.env };
  const argv = command.shell ? ['/bin/sh', '-c', command.file] : [command.file, ...command.args];
  if (!command.shell && !findsProgram(command.file, command.cwd, env.PATH)) return null;
  if (!path.isAbsolute(command.cwd) || [command.cwd, ...argv].some((s) => s.includes('\0'))) return null;
  if (SHELL_OWNED.some((name) => env[name] !== undefined || spareEnv[name] !== undefined)) return null;

  const unset: string[] = [];
  const exports: string[] = [];
  for (const name of new Set([...Object.keys(spareEnv), ...Object.keys(env), ...SET_BY_CD])) {
    const value = env[name];
    if (value === spareEnv[name] && !SET_BY_CD.includes(name)) continue;
    if (!SHELL_NAME.test(name) || value?.includes('\0')) return null;
    if (value === undefined) unset.push(name);
    else exports.push(`${name}=${quote(value)}`);
  }
  const parts = [`cd ${quote(command.cwd)} || exit 126`];
  if (unset.length > 0) parts.push(`unset ${unset.join(' ')}`);
  if (exports.length > 0) parts.push(`export ${exports.join(' ')}`);
  parts.push(`exec ${argv.map(quote).join(' ')} </dev/null`);
  return `${parts.join('; ')}\n`;
}

/** `value` as one word of the shell, taken literally: single quotes, a quote inside as '\''. */
function quote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * Whether `file` would be found as execvp and the shell find it: a name with a slash relative to
 * `cwd`, any other name in each `PATH` directory (an empty entry is `cwd`).
 */
function findsProgram(file: string, cwd: string, pathVariable: string | undefined): boolean {
  if (file === '' || file.startsWith('-')) return false;
  if (file.includes('/')) return isExecutableFile(path.resolve(cwd, file));
  if (pathVariable === undefined) return false;
  return pathVariable.split(':').some((dir) => isExecutableFile(path.resolve(cwd, dir, file)));
}

function isExecutableFile(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
