import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { Labels, WorkflowDefinition } from '@drover/shared';
import { callTrigger, enrollFleet, managementApi } from './fleet-setup.js';
import {
  mapLimit,
  SimJobRunner,
  SimUpdateRunner,
  type SimAgent,
  type DeployEvent,
  type SimJobRun,
  type SimUpdate,
} from './fleet-sim.js';

/**
 * A simulated fleet (bench/lib/fleet-sim.ts) and its callers on a worker thread (or a child
 * process): a benchmark that hosts the coordinator in its own thread, to time its services with
 * probes, keeps the simulation's JavaScript (signing, parsing the streams, the HTTP clients) off
 * the coordinator's event loop, as real agents and callers on other machines would be. Both still
 * share the machine's cores. Instants are `performance.now()` of the WORKER (its own time origin):
 * compare them with each other only; update jobs' instants are on the wall clock (`epochMs`).
 */

export interface FleetSetup {
  origin: string;
  /** A member's session token, and the organization: enrollment tokens are made with them. */
  session: string;
  orgId: string;
  count: number;
  labels: Labels;
  workflows: WorkflowDefinition[];
  /** The queue capacity each stream announces. */
  capacity: number;
  /** The simulated work of each job (SimJobRunner). */
  runMs: number;
  /** The simulated download and install of each update job (SimUpdateRunner); default 0. */
  updateMs?: number;
  /** Each update job's agent asks for its signed manifest once it takes the job (SimUpdateRunner); default no. */
  manifests?: boolean;
  /** Connections the fleet's reports share (the streams have one each); default 64. */
  reportSockets?: number;
}

export interface FleetLoad {
  /** `POST` here (`/v1/triggers/<id>/run`) with the token and body, `calls` times from `concurrency` loops. */
  route: string;
  token: string;
  body: string;
  calls: number;
  concurrency: number;
}

/** The update jobs of one release, each with its agent: their events as they arrived, and those run to their end. */
export interface AgentUpdates {
  deploys: (DeployEvent & { agentId: string })[];
  ended: (SimUpdate & { agentId: string })[];
}

export interface FleetAnswer {
  jobId: string;
  /** The agent the 202 named, or null (the job waits in the pool). */
  agentId: string | null;
  sentAt: number;
  answeredAt: number;
}

export interface FleetLoadResult {
  /** When the first call was sent. */
  t0: number;
  /** When the last call was answered. */
  answeredAt: number;
  answers: FleetAnswer[];
  /** Each agent's runs, in the order of `agentIds`. */
  runs: SimJobRun[][];
}

type Command =
  | { type: 'setup'; setup: FleetSetup }
  | { type: 'load'; load: FleetLoad }
  | { type: 'stop' }
  | { type: 'finishOne'; index: number }
  | { type: 'outcomes'; releaseId: string; failing: string[] }
  | { type: 'updates'; releaseId: string }
  | { type: 'close' };
type Reply =
  | { type: 'ready'; agentIds: string[] }
  | { type: 'loaded'; result: FleetLoadResult }
  | { type: 'stopped' }
  | { type: 'finished'; finished: boolean }
  | { type: 'outcomesSet' }
  | { type: 'updated'; updates: AgentUpdates }
  | { type: 'closed' }
  | { type: 'error'; message: string };

/** Where the fleet runs: a worker thread, or a child process (`Worker` and `ChildProcess` alike). */
interface FleetHost {
  once(event: 'message', listener: (reply: Reply) => void): unknown;
  once(event: 'error', listener: (error: Error) => void): unknown;
  once(event: 'exit', listener: () => void): unknown;
  off(event: 'message', listener: (reply: Reply) => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
}

/** The child process's environment variable that makes this module the fleet. */
const CHILD_ROLE = 'DROVER_BENCH_FLEET_CHILD';

/**
 * The main thread's handle on the fleet: one command at a time. On a worker thread by default; with
 * `childProcess`, in a child process of its own (same Node flags), so that its sockets count against
 * that process's file-descriptor limit and its CPU time is not this process's: for 10,000 streams
 * against a coordinator in this process (each side needs ~10,000 descriptors).
 */
export class FleetWorker {
  readonly #host: FleetHost;
  readonly #send: (command: Command) => void;
  readonly #stop: () => Promise<unknown>;
  #exit: Promise<void>;

  constructor(options: { childProcess?: boolean } = {}) {
    if (options.childProcess) {
      const child: ChildProcess = fork(fileURLToPath(import.meta.url), [], {
        env: { ...process.env, [CHILD_ROLE]: '1' },
        execArgv: process.execArgv,
        serialization: 'advanced',
        stdio: 'inherit',
      });
      this.#host = child as unknown as FleetHost;
      this.#send = (command) => child.send(command);
      this.#stop = async () => child.kill();
    } else {
      const worker = new Worker(new URL(import.meta.url), { workerData: { role: 'drover-bench-fleet' } });
      this.#host = worker as unknown as FleetHost;
      this.#send = (command) => worker.postMessage(command);
      this.#stop = () => worker.terminate();
    }
    this.#exit = new Promise((resolve) => this.#host.once('exit', () => resolve()));
  }

  #ask<T extends Reply['type']>(command: Command, expected: T): Promise<Extract<Reply, { type: T }>> {
    return new Promise((resolve, reject) => {
      const onMessage = (reply: Reply) => {
        this.#host.off('error', onError);
        if (reply.type === 'error') reject(new Error(`fleet worker: ${reply.message}`));
        else if (reply.type !== expected) reject(new Error(`fleet worker: ${reply.type}, expected ${expected}`));
        else resolve(reply as Extract<Reply, { type: T }>);
      };
      const onError = (error: Error) => {
        this.#host.off('message', onMessage);
        reject(error);
      };
      this.#host.once('message', onMessage);
      this.#host.once('error', onError);
      this.#send(command);
    });
  }

  /** Enrolls the agents, reports their workflows and labels, opens their streams, starts their runners. */
  async setup(setup: FleetSetup): Promise<string[]> {
    return (await this.#ask({ type: 'setup', setup }, 'ready')).agentIds;
  }

  /** Makes the calls; resolves once every job they made has been run (its work done). */
  async load(load: FleetLoad): Promise<FleetLoadResult> {
    return (await this.#ask({ type: 'load', load }, 'loaded')).result;
  }

  /**
   * The agents begin no more jobs (those they hold stay in their queues); resolves once their
   * reports were answered.
   */
  async stop(): Promise<void> {
    await this.#ask({ type: 'stop' }, 'stopped');
  }

  /** Agent `index`, stopped, finishes the oldest job it holds; resolves once answered (false: it held none). */
  async finishOne(index: number): Promise<boolean> {
    return (await this.#ask({ type: 'finishOne', index }, 'finished')).finished;
  }

  /**
   * How the agents end the update jobs of `releaseId`: `failing` agents fail them, the others
   * succeed. Until this is said for a release, its update jobs are held (accepted, not started).
   */
  async outcomes(releaseId: string, failing: readonly string[]): Promise<void> {
    await this.#ask({ type: 'outcomes', releaseId, failing: [...failing] }, 'outcomesSet');
  }

  /** The update jobs of `releaseId`: their events as they arrived, and those the agents ran to their end. */
  async updates(releaseId: string): Promise<AgentUpdates> {
    return (await this.#ask({ type: 'updates', releaseId }, 'updated')).updates;
  }

  /** Closes the streams and ends the worker. */
  async close(): Promise<void> {
    try {
      await this.#ask({ type: 'close' }, 'closed');
    } finally {
      await this.#stop();
      await this.#exit;
    }
  }
}

// ---- The worker ------------------------------------------------------------------------------------------

const asWorker = !isMainThread && (workerData as { role?: string } | null)?.role === 'drover-bench-fleet';
const asChild = isMainThread && process.env[CHILD_ROLE] === '1' && process.send !== undefined;
if (asWorker || asChild) {
  const port = asWorker
    ? parentPort!
    : {
        on: (event: 'message', listener: (command: Command) => void) => process.on(event, listener),
        postMessage: (reply: Reply) => process.send!(reply),
      };
  // A child process ends with its parent.
  if (asChild) process.on('disconnect', () => process.exit(0));
  const http1 = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let reports = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let agents: SimAgent[] = [];
  let runners: SimJobRunner[] = [];
  let updaters: SimUpdateRunner[] = [];
  /** Per release, the agents whose update jobs fail (SimUpdateRunner). */
  const failing = new Map<string, Set<string>>();
  const outcome = (releaseId: string, agentId: string) => {
    const set = failing.get(releaseId);
    return set === undefined ? null : set.has(agentId) ? 'failed' : 'success';
  };

  const setup = async (s: FleetSetup): Promise<Reply> => {
    agents = await enrollFleet({
      origin: s.origin,
      manage: managementApi(s.origin, s.session, s.orgId, http1),
      count: s.count,
      concurrency: 16,
      report: { workflows: s.workflows, labels: () => s.labels, agent: http1 },
    });
    if (s.reportSockets !== undefined) reports = new http.Agent({ keepAlive: true, maxSockets: s.reportSockets });
    runners = agents.map((a) => new SimJobRunner(a, s.origin, s.runMs, reports));
    updaters = agents.map(
      (a) => new SimUpdateRunner(a, s.origin, s.updateMs ?? 0, reports, outcome, s.manifests ?? false),
    );
    await mapLimit(agents, 50, (a) => a.connect(s.origin, s.capacity));
    return { type: 'ready', agentIds: agents.map((a) => a.agentId) };
  };

  const load = async (l: FleetLoad): Promise<Reply> => {
    const before = runners.reduce((sum, r) => sum + r.runs.length, 0);
    const answers: FleetAnswer[] = [];
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: l.concurrency }, async () => {
        while (next < l.calls) {
          next += 1;
          const sentAt = performance.now();
          const answer = await callTrigger(l.route, l.token, l.body, http1);
          const { jobId, agentId } = JSON.parse(answer.text) as { jobId: string; agentId?: string | null };
          answers.push({ jobId, agentId: agentId ?? null, sentAt, answeredAt: performance.now() });
        }
      }),
    );
    const answeredAt = performance.now();
    const deadline = answeredAt + 600_000;
    for (;;) {
      const failed = runners.find((r) => r.error);
      if (failed) throw failed.error!;
      const done = runners.reduce((sum, r) => sum + r.runs.length, 0) - before;
      if (done >= l.calls) break;
      if (performance.now() > deadline) throw new Error(`${l.calls - done} jobs not run 600 s after the calls`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await Promise.all(runners.map((r) => r.settled()));
    return { type: 'loaded', result: { t0, answeredAt, answers, runs: runners.map((r) => r.runs) } };
  };

  port.on('message', (command: Command) => {
    const handle = async (): Promise<Reply> => {
      switch (command.type) {
        case 'setup':
          return setup(command.setup);
        case 'load':
          return load(command.load);
        case 'stop':
          for (const r of runners) r.stop();
          await Promise.all(runners.map((r) => r.settled()));
          return { type: 'stopped' };
        case 'finishOne':
          return { type: 'finished', finished: await runners[command.index]!.finishOne() };
        case 'outcomes':
          failing.set(command.releaseId, new Set(command.failing));
          for (const u of updaters) u.go();
          return { type: 'outcomesSet' };
        case 'updates': {
          const failed = updaters.find((u) => u.error);
          if (failed) throw failed.error!;
          const of = <T extends { releaseId: string }>(list: (u: SimUpdateRunner) => T[]) =>
            updaters.flatMap((u) =>
              list(u)
                .filter((x) => x.releaseId === command.releaseId)
                .map((x) => ({ ...x, agentId: u.agent.agentId })),
            );
          return { type: 'updated', updates: { deploys: of((u) => u.deploys), ended: of((u) => u.updates) } };
        }
        case 'close':
          for (const a of agents) a.close();
          http1.destroy();
          reports.destroy();
          return { type: 'closed' };
      }
    };
    handle().then(
      (reply) => port.postMessage(reply),
      (error: unknown) => port.postMessage({ type: 'error', message: (error as Error).stack ?? String(error) }),
    );
  });
}
