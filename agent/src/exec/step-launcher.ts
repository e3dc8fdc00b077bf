import fs from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { execa } from 'execa';
import { signalProcessGroup } from './process-group.js';

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

/**
 * The launcher's spare: dash reading commands from its stdin, with exactly `env`, and a fourth
 * pipe (fd 3) on which it waits for the word to exec a held step.
 */
function spawnSpare(env: Record<string, string | undefined>) {
  const { stdout: _stdout, stderr: _stderr, ...options } = PIPED;
  return execa(SPARE_SHELL, ['-s'], {
    ...options,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    cwd: '/',
    env,
    extendEnv: false,
  });
}

/** The shell variable the spare's `read` fills from fd 3; a step whose environment has it is spawned. */
const GATE_VARIABLE = 'DROVER_SPARE_GATE';

/**
 * A step's process made ready up to its exec and held there: its command line is in the spare,
 * which waits on fd 3 to go on. `go` lets it run (the step's process; called again, it answers
 * the same process); `takeUp` is `go` for the launch that runs it as its step. `drop` ends it:
 * unrun (the pipe's end: the shell exits 125), or killed when it went and no launch took it up
 * (a step must never run untracked); nothing once taken up. Until one of them, it keeps nothing
 * running.
 */
export interface HeldStep {
  readonly command: StepCommand;
  /** Whether `go` was called: the step runs (or ran) in it. */
  readonly went: boolean;
  /** Whether its shell is still there to let go (not killed meanwhile). */
  alive(): boolean;
  go(): StepProcess;
  /** `go`, by the launch that runs the step from then on: `drop` does nothing more. */
  takeUp(): StepProcess;
  drop(): void;
}

/**
 * Starts steps' processes with the fork already paid. Forking the agent copies its page tables:
 * 2.6 to 4 ms on the reference VM (docs/performance.md), during which its event loop waits. So
 * the launcher forks a spare process ahead of time, while the agent has nothing else to do: a
 * `/bin/dash` reading its commands from a pipe, in its own process group, its output piped. To
 * start a step through it, the agent writes one command line to that pipe and a line to a
 * second one (fd 3); the shell waits for the second, changes to the step's directory, makes its
 * environment exactly what spawnStep would give (the agent's variables with the step's on top),
 * and execs the step's program with stdin from /dev/null. The step keeps the spare's pid and
 * process group. The two writes can be apart (`hold`, then `go`): the command line, which takes
 * a few tenths of a millisecond to make (checks of the program and the environment), is then made
 * while the job's start report travels, and the step starts with one write once it is answered.
 *
 * A step goes through spawnStep instead when there is no spare (or no dash on the machine: then
 * every step is spawned), or when the shell could make a difference: where the exec would fail
 * (spawnStep's error names the cause, the shell would only exit 126 or 127), or where the shell
 * would change the environment (a name a shell cannot set, or a variable it manages itself:
 * `IFS`, `PPID`...). Until its line comes the spare runs nothing, and it does not keep the agent
 * running; when the agent ends (or closes the launcher) the pipe closes and the spare exits.
 */
export class StepLauncher {
  #spare: { process: Spare; env: Record<string, string | undefined> } | null = null;
  #closed = !isExecutableFile(SPARE_SHELL);

  /**
   * Forks a spare when there is none (blocks the event loop for the fork: call it when idle).
   * None is forked while the agent's own environment has a variable the shell would change.
   */
  warm(): void {
    if (this.#closed || (this.#spare && isRunning(this.#spare.process))) return;
    const env = { ...process.env };
    if (!shellKeeps(Object.keys(env))) return;
    const spare = spawnSpare(env);
    if (spare.pid === undefined) return; // the fork failed; steps are spawned directly
    spare.stdin.on('error', () => {}); // EPIPE when the spare is gone
    gateOf(spare).on('error', () => {}); // the same
    spare.once('exit', () => {
      if (this.#spare?.process === spare) this.#spare = null;
    });
    holdsAgent(spare, false);
    this.#spare = { process: spare, env };
  }

  /**
   * The step's process: `held` when it was held for this very command (and its shell is still
   * there), else the spare taken for it when it can be, else a new one (spawnStep). A `held` step
   * not used is dropped.
   */
  launch(command: StepCommand, held?: HeldStep | null): StepProcess {
    // The same program, arguments, shell, directory and environment.
    const same = held !== null && held !== undefined && isDeepStrictEqual(held.command, command);
    if (held?.went) {
      if (!same) {
        // Its caller lets a step go early only where its command cannot differ: never reached.
        held.drop();
        throw new Error('a step let go ahead of its launch differs from the command launched');
      }
      return held.takeUp();
    }
    if (same && held.alive()) return held.takeUp();
    held?.drop();
    return this.hold(command)?.go() ?? spawnStep(command);
  }

  /**
   * Takes the spare for `command` and holds it just before the exec (HeldStep). Null when there
   * is no spare, or the step must be spawned (see the class).
   */
  hold(command: StepCommand): HeldStep | null {
    const spare = this.#spare;
    this.#spare = null;
    const line = spare && isRunning(spare.process) ? commandLine(command, spare.env) : null;
    if (!spare || line === null) {
      if (spare) endSpare(spare.process);
      return null;
    }
    const child = spare.process;
    child.stdin.end(line);
    // `taken`: it went, and a launch runs it as its step.
    let settled: 'went' | 'taken' | 'dropped' | null = null;
    const go = () => {
      if (settled === 'went' || settled === 'taken') return child;
      if (settled === 'dropped') throw new Error('a dropped step cannot go');
      settled = 'went';
      holdsAgent(child, true);
      gateOf(child).end('\n');
      return child;
    };
    return {
      command,
      get went() {
        return settled === 'went' || settled === 'taken';
      },
      alive: () => settled === null && isRunning(child),
      go,
      takeUp() {
        const step = go();
        settled = 'taken';
        return step;
      },
      drop() {
        if (settled === 'went') signalProcessGroup(child.pid!, 'SIGKILL');
        if (settled) return;
        settled = 'dropped';
        endSpare(child);
      },
    };
  }

  /** Ends the spare; launch spawns every step from then on. */
  close(): void {
    this.#closed = true;
    if (this.#spare) endSpare(this.#spare.process);
    this.#spare = null;
  }
}

/** Alive, and not a zombie the agent has not reaped yet (Linux: read from /proc). */
function isRunning(child: StepProcess): boolean {
  if (child.exitCode !== null || child.signalCode !== null) return false;
  try {
    const stat = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return process.platform !== 'linux'; // no procfs to ask: trust the exit status
  }
}

/** Whether the spare's process and pipes keep the agent's event loop alive (an idle one does not). */
function holdsAgent(spare: Spare, hold: boolean): void {
  for (const handle of [spare, spare.stdin, spare.stdout, spare.stderr, gateOf(spare)] as unknown as net.Socket[]) {
    if (hold) handle.ref();
    else handle.unref();
  }
}

/** The spare's fd 3, on which it waits for the line that lets a held step exec. */
function gateOf(spare: Spare): net.Socket {
  return spare.stdio[3] as unknown as net.Socket;
}

function endSpare(spare: Spare): void {
  // EOF on both: the shell exits without running anything (at its end of input, or at its `read`).
  spare.stdin.destroy();
  gateOf(spare).destroy();
}

/** A name `export` and `unset` take. */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Variables the shell itself sets on `cd`: always given their exact value, or unset. */
const SET_BY_CD = ['PWD', 'OLDPWD'];

/**
 * Variables dash resets or drops whatever the environment says, and the one its `read` of fd 3
 * sets: a step with one is spawned.
 */
const SHELL_OWNED = ['IFS', 'OPTIND', 'PPID', 'LINENO', GATE_VARIABLE];

/** Whether dash passes on an environment of these names as it is (it drops other names). */
function shellKeeps(names: Iterable<string>): boolean {
  for (const name of names) if (!SHELL_NAME.test(name) || SHELL_OWNED.includes(name)) return false;
  return true;
}

/** Linux's limit on one argument or `NAME=value` string (MAX_ARG_STRLEN, 32 pages), NUL included. */
const MAX_STRING_BYTES = 128 * 1024;
/** Arguments and environment together, well under Linux's ARG_MAX of a quarter of the stack. */
const MAX_EXEC_BYTES = 1024 * 1024;

/** The first of a program's strings (argv, then the environment's `NAME=value`) the system refuses, or their total. */
type ExecLimit = { kind: 'nul' | 'long'; index: number; bytes: number } | { kind: 'total'; bytes: number };

/**
 * What keeps `strings` from being given to a program, or null: a NUL character (Node refuses it),
 * one string over MAX_STRING_BYTES, or all of them (with their pointers) over MAX_EXEC_BYTES.
 */
function execLimit(strings: readonly string[]): ExecLimit | null {
  let total = 0;
  for (const [index, s] of strings.entries()) {
    if (s.includes('\0')) return { kind: 'nul', index, bytes: 0 };
    const bytes = Buffer.byteLength(s) + 1;
    if (bytes > MAX_STRING_BYTES) return { kind: 'long', index, bytes };
    total += bytes + 8; // and its pointer
  }
  return total > MAX_EXEC_BYTES ? { kind: 'total', bytes: total } : null;
}

/** The program's argv and environment strings as spawnStep gives them (the agent's variables, the step's on top). */
function execStrings(
  command: StepCommand,
  env: Record<string, string | undefined>,
): { argv: string[]; strings: string[] } {
  const argv = command.shell ? ['/bin/sh', '-c', command.file] : [command.file, ...command.args];
  const vars = Object.entries(env).flatMap(([name, value]) => (value === undefined ? [] : [`${name}=${value}`]));
  return { argv, strings: [...argv, ...vars] };
}

/**
 * Why the system refused to start `command` for its arguments or variables, in words a
 * technician can act on, naming the variable or argument; null when none of them explains it.
 * `tooBig`: the kernel answered E2BIG, so when no single string is over its limit, their total is.
 */
export function startRefusal(command: StepCommand, tooBig: boolean): string | null {
  const { argv, strings } = execStrings(command, { ...process.env, ...command.env });
  const what = (index: number) => describeExecString(command, argv.length, strings[index]!, index);
  const limit = execLimit(strings);
  if (limit?.kind === 'nul')
    return `${what(limit.index)} holds a NUL character (\`\\0\`), which no program can be given`;
  if (limit?.kind === 'long') {
    const named = limit.index >= argv.length ? ' with its name' : '';
    return (
      `${what(limit.index)} is ${limit.bytes - 1} bytes long${named}, and Linux starts no program with a ` +
      `variable or an argument over ${MAX_STRING_BYTES - 1} bytes (128 KiB): ${largeValues(strings[limit.index]!)}`
    );
  }
  if (!tooBig) return null;
  const sizes = strings.map((s) => Buffer.byteLength(s));
  const largest = sizes.indexOf(Math.max(...sizes));
  const total = sizes.reduce((sum, bytes) => sum + bytes + 9, 0); // its NUL, its pointer
  return (
    `the arguments and variables together are ${total} bytes, more than Linux gives a program at its start ` +
    '(a quarter of the stack limit, `ulimit -s`: 2 MiB by default); the largest is ' +
    `${what(largest)} (${sizes[largest]} bytes): ${largeValues(strings[largest]!)}`
  );
}

/** `the variable DROVER_PARAM_NOTES (a param's value)`, `the argument args[2]`: the `index`th of execStrings. */
function describeExecString(command: StepCommand, argc: number, text: string, index: number): string {
  if (index < argc) {
    if (command.shell) return 'the command line (`run`)';
    return index === 0 ? 'the program (`run`)' : `the argument args[${index - 1}]`;
  }
  const name = text.slice(0, text.indexOf('='));
  return `the variable ${name}${name.startsWith(PARAM_PREFIX) ? " (a param's value)" : ''}`;
}

/** What to do instead of giving a program a large value. */
const largeValues = (text: string): string =>
  text.startsWith(PARAM_PREFIX) ? 'pass large values as a `file` param instead' : 'pass large values in a file instead';

/** The variables of params (step-env.ts). */
const PARAM_PREFIX = 'DROVER_PARAM_';

/**
 * The spare's command line for `command`: wait for the line on fd 3 (at its end: exit 125,
 * nothing run), `cd`, the variables that differ from the spare's own, then `exec` with stdin from
 * /dev/null and fd 3 closed. Null when the step must be spawned directly.
 */
function commandLine(command: StepCommand, spareEnv: Record<string, string | undefined>): string | null {
  const env: Record<string, string | undefined> = { ...process.env, ...command.env };
  const argv = command.shell ? ['/bin/sh', '-c', command.file] : [command.file, ...command.args];
  const names = new Set([...Object.keys(spareEnv), ...Object.keys(env)]);
  if (!shellKeeps(names) || !execWouldStart(command, env)) return null;

  const unset: string[] = [];
  const exports: string[] = [];
  for (const name of new Set([...names, ...SET_BY_CD])) {
    const value = env[name];
    if (value === spareEnv[name] && !SET_BY_CD.includes(name)) continue;
    if (value === undefined) unset.push(name);
    else exports.push(`${name}=${quote(value)}`);
  }
  const parts = [`read -r ${GATE_VARIABLE} <&3 || exit 125`, `cd ${quote(command.cwd)} || exit 126`];
  if (unset.length > 0) parts.push(`unset ${unset.join(' ')}`);
  if (exports.length > 0) parts.push(`export ${exports.join(' ')}`);
  parts.push(`exec ${argv.map(quote).join(' ')} </dev/null 3<&-`);
  return `${parts.join('; ')}\n`;
}

/** `value` as one word of the shell, taken literally: single quotes, a quote inside as '\''. */
function quote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * Whether the shell's `cd` and `exec` would succeed: the directory can be entered, the program is
 * found and so is its script's interpreter, and the arguments and environment are within the
 * kernel's limits. Where they would fail, spawnStep reports why (ENOENT, E2BIG...), which the
 * shell cannot: it prints a line and exits 126 or 127.
 */
function execWouldStart(command: StepCommand, env: Record<string, string | undefined>): boolean {
  if (!path.isAbsolute(command.cwd) || !mayExecute(command.cwd)) return false;
  if (execLimit(execStrings(command, env).strings) !== null) return false;
  if (command.shell) return isExecutableFile('/bin/sh');
  const program = findProgram(command.file, command.cwd, env.PATH);
  return program !== null && interpreterFound(program, command.cwd);
}

/** Whether this process may execute `file`, or enter it when it is a directory. */
function mayExecute(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The program execvp and the shell would run: a name with a slash relative to `cwd`, any other
 * name in the first `PATH` directory that has it as an executable file (an empty entry is `cwd`).
 */
function findProgram(file: string, cwd: string, pathVariable: string | undefined): string | null {
  if (file === '' || file.startsWith('-')) return null;
  const candidates = file.includes('/')
    ? [path.resolve(cwd, file)]
    : (pathVariable?.split(':') ?? []).map((dir) => path.resolve(cwd, dir, file));
  return candidates.find(isExecutableFile) ?? null;
}

/**
 * False when `program` is a script whose `#!` line names an interpreter that is not an executable
 * file, as the kernel reads it: the path ends at a space, tab or newline, so a line ending in CRLF
 * names `/bin/sh\r`.
 */
function interpreterFound(program: string, cwd: string): boolean {
  const head = Buffer.alloc(256); // the kernel reads as much (BINPRM_BUF_SIZE)
  let read: number;
  try {
    const fd = fs.openSync(program, 'r');
    try {
      read = fs.readSync(fd, head, 0, head.length, 0);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return false;
  }
  if (read < 2 || head[0] !== 0x23 || head[1] !== 0x21) return true; // not a script: as it is
  const line = head.subarray(2, read).toString('latin1');
  const interpreter = /^[ \t]*([^ \t\n]+)/.exec(line)?.[1];
  if (!interpreter || !line.includes('\n')) return false; // spawnStep says what the kernel says
  return isExecutableFile(path.resolve(cwd, interpreter));
}

function isExecutableFile(file: string): boolean {
  // stat first: a missing file (most `PATH` entries) is answered without an exception, whose
  // making costs ~30 µs (a long PATH made a step start half a millisecond later).
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(file, { throwIfNoEntry: false });
  } catch {
    return false; // ENOTDIR, EACCES...
  }
  return stat?.isFile() === true && mayExecute(file);
}
