import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { enrollAgent } from '../../agent/src/enroll.js';
import type { DaemonStatus } from '../../agent/src/status/daemon-status.js';
import { loadPrivateKey } from '../../agent/src/state/enrollment.js';
import type { TestAgent } from './agent.js';
import { AGENT_MAIN } from './built-commands.js';
import { eventually } from './poll.js';
import type { Clock } from '@drover/coordinator';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from './coordinator.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** A state directory enrolled with `t` through the agent library (the CLI's code path). */
export interface AgentStateDir {
  stateDir: string;
  agentId: string;
  orgId: string;
  /** Signed requests as this agent (assertions from the agent's side). */
  agent: Pick<TestAgent, 'agentId' | 'orgId'>;
}

/** Enrolls a fresh state directory; `url` is where the agent will reach the coordinator (default `t.url`). */
export async function enrollAgentStateDir(
  t: Pick<TestCoordinator, 'owner' | 'orgId' | 'url'>,
  url = t.url,
): Promise<AgentStateDir> {
  const root = makeTempDir('drover-agent-daemon-');
  const stateDir = path.join(root, 'state');
  const created = await t.owner.post<{ token: string }>(`/orgs/${t.orgId}/enrollment-tokens`, { body: {} });
  if (created.status !== 201) throw new Error(`enrollment token: ${created.status} ${created.text}`);
  const { enrollment } = await enrollAgent({ url, token: created.body.token, stateDir, name: 'daemon-test' });
  loadPrivateKey(stateDir);
  return {
    stateDir,
    agentId: enrollment.agentId,
    orgId: enrollment.orgId,
    agent: { agentId: enrollment.agentId, orgId: enrollment.orgId },
  };
}

/** Writes `<state-dir>/workflows/<name>.yaml`. */
export function writeWorkflowFile(stateDir: string, name: string, yaml: string): void {
  const dir = path.join(stateDir, 'workflows');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(dir, `${name}.yaml`), yaml);
}

export interface DaemonProcess {
  child: ChildProcess;
  stateDir: string;
  /** Resolves with the exit code (or the signal) when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** The agent log's records so far. */
  logRecords(): Record<string, any>[];
  /** Resolves with the first log record matching, polling the agent log. */
  waitForLog(match: (record: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>;
  status(): DaemonStatus | null;
  /** SIGKILL, and waits for the exit. */
  kill9(): Promise<void>;
}

/**
 * Runs the real `drover-agent run` as a child process (as built from the sources:
 * built-commands.ts). Stop it in an `afterEach`/`afterAll` registered before any assertion.
 */
export function startDaemonProcess(
  stateDir: string,
  args: string[] = [],
  env: Record<string, string> = {},
): DaemonProcess {
  const child = spawn(process.execPath, [AGENT_MAIN, 'run', '--state-dir', stateDir, ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', ...env },
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const logRecords = () => readLog(stateDir);
  return {
    child,
    stateDir,
    exited,
    output: () => output,
    logRecords,
    waitForLog(match, timeoutMs = 15_000) {
      return eventually(
        () => {
          const found = logRecords().find(match);
          if (found) return found;
          if (child.exitCode !== null)
            throw new Error(`the daemon exited (${child.exitCode}) before the log record; output:\n${output}`);
          return undefined;
        },
        timeoutMs,
        () =>
          `a matching agent log record; log:\n${logRecords()
            .map((r) => r.msg)
            .join('\n')}\noutput:\n${output}\n`,
      );
    },

    status() {
      try {
        return JSON.parse(fs.readFileSync(path.join(stateDir, 'status.json'), 'utf8')) as DaemonStatus;
      } catch {
        return null;
      }
    },
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Stops a daemon that may still run (test cleanup). */
export async function stopDaemonProcess(daemon: DaemonProcess | undefined): Promise<void> {
  if (!daemon || daemon.child.exitCode !== null || daemon.child.signalCode !== null) return;
  daemon.child.kill('SIGKILL');
  await daemon.exited;
}

/**
 * One coordinator and one real `drover-agent run` whose workflow files are written and reported:
 * the fixture of the end-to-end tests that run jobs through a real agent. `close()` stops both,
 * kills whatever the jobs in `jobIds` left running, and removes the directories.
 */
export interface DaemonRig {
  t: TestCoordinator;
  a: AgentStateDir;
  daemon: DaemonProcess;
  /** The test's scratch directory (markers, gate files). */
  work: string;
  /** The jobs the test started: their processes are killed on close. */
  jobIds: string[];
  close(): Promise<void>;
}

export async function startDaemonRig(options: {
  /** Prefix of the scratch directory's name. */
  workPrefix: string;
  /** The workflow files, name to YAML lines, given the scratch directory. */
  workflows: (work: string) => Record<string, string[]>;
  /** Anything more to write into the state directory before the daemon starts (secrets). */
  prepare?: (stateDir: string) => void;
  /** The coordinator's clock (a test moves it to pass an expiry). */
  clock?: Clock;
  /** More coordinator settings (a chat provider's, pointing at a fake). */
  env?: Record<string, string>;
  /** More `drover-agent run` arguments. */
  daemonArgs?: string[];
}): Promise<DaemonRig> {
  const t = await startTestCoordinator({
    env: { DROVER_STREAM_PING_MS: '500', ...options.env },
    clock: options.clock,
  });
  const work = makeTempDir(options.workPrefix);
  const jobIds: string[] = [];
  let stateDir: string | undefined;
  let daemon: DaemonProcess | undefined;
  const close = async () => {
    await stopDaemonProcess(daemon);
    await t.close();
    for (const id of jobIds) killProcessesWithEnv('DROVER_JOB_ID', id);
    if (stateDir) fs.rmSync(path.dirname(stateDir), { recursive: true, force: true });
    fs.rmSync(work, { recursive: true, force: true });
  };
  try {
    const a = await enrollAgentStateDir(t);
    stateDir = a.stateDir;
    const workflows = options.workflows(work);
    for (const [name, lines] of Object.entries(workflows)) writeWorkflowFile(a.stateDir, name, `${lines.join('\n')}\n`);
    options.prepare?.(a.stateDir);
    daemon = startDaemonProcess(a.stateDir, options.daemonArgs);
    const count = Object.keys(workflows).length;
    await eventually(
      async () => {
        const res = await t.owner.get(`/orgs/${t.orgId}/workflows`);
        return res.body.filter((w: { agentId: string }) => w.agentId === a.agentId).length === count;
      },
      30_000,
      'the agent to connect and report its workflows',
    );
    return { t, a, daemon, work, jobIds, close };
  } catch (error) {
    await close();
    throw error;
  }
}

function readLog(stateDir: string): Record<string, any>[] {
  let text = '';
  try {
    text = fs.readFileSync(path.join(stateDir, 'logs', 'agent.log'), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, any>;
      } catch {
        return { msg: line };
      }
    });
}

/**
 * A TCP proxy in front of the coordinator that a test can cut (connections refused, open ones
 * dropped) and restore on the same port: the coordinator "goes down" for the agent only.
 */
export interface CuttableProxy {
  url: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  /** Sends new connections to another coordinator (one restarted on a new port); open ones stay. */
  retarget(targetUrl: string): void;
  /** Cuts every open connection and keeps listening (a flapping link). */
  reset(): void;
  close(): Promise<void>;
}

export async function startCuttableProxy(targetUrl: string): Promise<CuttableProxy> {
  const net = await import('node:net');
  let target = new URL(targetUrl);
  const sockets = new Set<import('node:net').Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as import('node:net').AddressInfo).port);
      });
    });
  const port = await listen(0);
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });
  return {
    url: `http://127.0.0.1:${port}`,
    cut: stop,
    restore: async () => {
      await listen(port);
    },
    retarget: (url) => {
      target = new URL(url);
    },
    reset: () => {
      for (const s of sockets) s.destroy();
    },
    close: stop,
  };
}

/** Whether `pid` is a live process, read from /proc (a zombie left to an init that does not reap is not). */
export function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The agent's spare step processes (exec/step-launcher.ts): its children running `/bin/dash -s`. */
export function sparesOf(agentPid: number): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (ppid === agentPid && cmdline === '/bin/dash\0-s\0' && isAlive(Number(entry))) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * The live (not zombie) processes whose environment holds `name=value`, read from /proc: every
 * process a step started, grandchildren included, carries the job's `DROVER_JOB_ID`.
 */
export function processesWithEnv(name: string, value: string): number[] {
  const needle = `${name}=${value}`;
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = fs.readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0');
      if (!env.includes(needle)) continue;
      if (isAlive(Number(entry))) found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours
    }
  }
  return found;
}

/** SIGKILLs every process `processesWithEnv` finds (test cleanup: never leave a step behind). */
export function killProcessesWithEnv(name: string, value: string): void {
  for (const pid of processesWithEnv(name, value)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
