import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchCoordinator } from './coordinator.js';
import { seedEnrollmentToken } from './seed.js';

/**
 * A REAL agent for the benchmarks: `drover-agent enroll` and then `drover-agent run` as child
 * processes (TypeScript through tsx with the `drover-source` condition, like `pnpm agent` and the
 * e2e tests; or, with `binary`, the single executable that ships), in a temp state directory with
 * the given workflow files. The agent reaches the coordinator over loopback HTTP and the stream,
 * exactly as it would in production.
 */

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const AGENT_MAIN = path.join(repoRoot, 'agent/src/cli/main.ts');
const AGENT_BINARY = path.join(repoRoot, 'agent/dist/drover-agent');
const NODE_ARGS = ['--conditions=drover-source', '--import', 'tsx'];

/** The program and its leading arguments for `drover-agent <args>`. */
function agentCommand(options: BenchAgentOptions, nodeFlags: string[] = []): [string, string[]] {
  if (options.command) {
    if (nodeFlags.length > 0) throw new Error('node flags cannot be given with an explicit agent command');
    const [program, ...leading] = options.command;
    if (!program) throw new Error('the agent command is empty');
    return [program, leading];
  }
  if (!options.binary) return [process.execPath, [...nodeFlags, ...NODE_ARGS, AGENT_MAIN]];
  if (!fs.existsSync(AGENT_BINARY))
    throw new Error(`${AGENT_BINARY} is missing: run \`pnpm --filter @drover/agent build:binary\` first`);
  if (nodeFlags.length > 0) throw new Error('node flags (--profile-agent) cannot be given to the single executable');
  return [AGENT_BINARY, []];
}

export interface BenchAgent {
  agentId: string;
  stateDir: string;
  child: ChildProcess;
  /** The agent's log records (`<state-dir>/logs/agent.log`, pino JSON lines). */
  logRecords(): Record<string, unknown>[];
  /** SIGTERM (graceful stop; a CPU profile asked for with `nodeFlags` is written then), and removes the state directory. */
  close(): Promise<void>;
}

export interface BenchAgentOptions {
  /** Workflow files: file name (without `.yaml`) → YAML text. */
  workflows: Record<string, string>;
  /** Extra `node` flags for the daemon process (e.g. `--cpu-prof --cpu-prof-dir=<dir>`). */
  nodeFlags?: string[];
  /** Extra `drover-agent run` arguments. */
  runArgs?: string[];
  /** Extra `drover-agent enroll` arguments (`--ca-file`, say). */
  enrollArgs?: string[];
  /** Where the temp state directory is made (default the OS temp dir; `/dev/shm` for a tmpfs). */
  parentDir?: string;
  /** Run the single executable `agent/dist/drover-agent` instead of the sources. */
  binary?: boolean;
  /**
   * The program and leading arguments that stand for `drover-agent`, instead of the sources or
   * `binary`: e.g. `[process.execPath, 'agent/dist/cli/main.js']`, or another single executable.
   */
  command?: readonly string[];
  /** Where the agent reaches the coordinator (default `bench.url`): e.g. an HTTPS proxy in front of it. */
  url?: string;
  /** More environment variables for `enroll` and `run` (NODE_EXTRA_CA_CERTS, say). */
  env?: Record<string, string>;
}

/**
 * Enrolls a fresh state directory with `bench`'s coordinator (token seeded through the
 * repositories, enrollment through the CLI), writes the workflow files, starts the daemon and
 * resolves once the coordinator sees the agent `connected` with every workflow reported.
 */
export async function startBenchAgent(bench: BenchCoordinator, options: BenchAgentOptions): Promise<BenchAgent> {
  const root = fs.mkdtempSync(path.join(options.parentDir ?? os.tmpdir(), 'drover-bench-agent-'));
  const stateDir = path.join(root, 'state');
  let child: ChildProcess | undefined;
  const remove = () => fs.rmSync(root, { recursive: true, force: true });
  try {
    const token = await seedEnrollmentToken(bench.coordinator, bench.orgId);
    await runToEnd(
      [
        'enroll',
        '--url',
        options.url ?? bench.url,
        '--token',
        token,
        '--state-dir',
        stateDir,
        '--name',
        'bench-agent',
        ...(options.enrollArgs ?? []),
      ],
      agentCommand(options),
      options.env,
    );
    const { agentId } = JSON.parse(fs.readFileSync(path.join(stateDir, 'agent.json'), 'utf8')) as { agentId: string };
    const workflowsDir = path.join(stateDir, 'workflows');
    fs.mkdirSync(workflowsDir, { recursive: true, mode: 0o700 });
    for (const [name, yaml] of Object.entries(options.workflows)) {
      fs.writeFileSync(path.join(workflowsDir, `${name}.yaml`), yaml);
    }

    let output = '';
    const [program, leading] = agentCommand(options, options.nodeFlags);
    const started = spawn(program, [...leading, 'run', '--state-dir', stateDir, ...(options.runArgs ?? [])], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', ...options.env },
    });
    child = started;
    started.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<void>((resolve) => started.once('exit', () => resolve()));

    const { repos } = bench.coordinator.ctx;
    const names = Object.keys(options.workflows);
    const until = Date.now() + 30_000;
    for (;;) {
      if (started.exitCode !== null) throw new Error(`the agent daemon exited (${started.exitCode}):\n${output}`);
      const agent = await repos.agents.findById(agentId);
      const reported = await Promise.all(names.map((n) => repos.workflows.findActiveByAgentAndName(agentId, n)));
      if (agent?.status === 'connected' && reported.every((w) => w !== null)) break;
      if (Date.now() > until) throw new Error(`the agent did not connect with its workflows in 30 s:\n${output}`);
      await sleep(50);
    }

    return {
      agentId,
      stateDir,
      child: started,
      logRecords: () => readLog(stateDir),
      async close() {
        try {
          if (started.exitCode === null && started.signalCode === null) {
            started.kill('SIGTERM');
            const timer = setTimeout(() => started.kill('SIGKILL'), 15_000);
            await exited;
            clearTimeout(timer);
          }
        } finally {
          remove();
        }
      },
    };
  } catch (error) {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    remove();
    throw error;
  }
}

/** Runs `drover-agent <args>` to its end; throws with its output when it fails. */
function runToEnd(
  args: string[],
  [program, leading]: [string, string[]],
  env: Record<string, string> = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, [...leading, ...args], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', ...env },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`drover-agent ${args[0]} exited with ${code}:\n${output}`)),
    );
  });
}

function readLog(stateDir: string): Record<string, unknown>[] {
  let text = '';
  try {
    text = fs.readFileSync(path.join(stateDir, 'logs', 'agent.log'), 'utf8');
  } catch {
    return [];
  }
  const records: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      records.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a line cut by a rotation: skip it
    }
  }
  return records;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
