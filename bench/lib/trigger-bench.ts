import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sleep, startBenchAgent, type BenchAgent } from './agent.js';
import { startBenchCoordinator, type BenchCoordinator } from './coordinator.js';
import {
  formatLatency,
  JsonClient,
  probeJobMoments,
  summarize,
  WallClock,
  type JsonResponse,
  type LatencySummary,
} from './latency.js';
import { integerOption } from './options.js';
import { summarizeProfile, withCpuProfile } from './profile.js';
import { machineNote } from './report.js';
import { seedApiToken, seedTrigger } from './seed.js';

/**
 * What the real-agent latency benchmarks (dispatch-latency, sync-roundtrip) share: their options,
 * an in-process coordinator and a REAL agent daemon (optionally CPU-profiled, or on tmpfs) with one
 * workflow, a webhook trigger on it and a token that may run it, one timed call at a time, the
 * warm-up and measured rounds, and the agent's CPU profiles once it stopped.
 */

export interface TriggerBenchOptions {
  runs: number;
  warmup: number;
  rounds: number;
  gapMs: number;
  /** `--profile <file>`: the coordinator's CPU profile over the measured rounds. */
  profile: string | undefined;
  /** `--profile-agent <dir>`, resolved: the agent daemon's CPU profiles. */
  profileAgentDir: string | undefined;
  /** `--tmpfs`: the agent's state directory on /dev/shm (a diagnosis aid). */
  tmpfs: boolean;
  /** `--shell`, only where the benchmark takes it. */
  shell: boolean;
  /** `--binary`: the agent as the single executable `agent/dist/drover-agent` (build:binary). */
  binary: boolean;
  /**
   * `--against <program>`: a second agent, another build (a single executable, or a command line
   * such as `node /old/agent/dist/cli/main.js`), whose calls alternate with the first's.
   */
  against: string[] | undefined;
}

/**
 * `[--runs <defaultRuns>] [--warmup 20] [--rounds 1] [--gap-ms 10] [--profile <file>]
 * [--profile-agent <dir>] [--tmpfs] [--binary] [--against <program>]`, and `[--shell]` when `withShell`.
 */
export function parseTriggerBenchOptions(defaultRuns: string, { withShell = false } = {}): TriggerBenchOptions {
  const options = {
    runs: { type: 'string', default: defaultRuns },
    warmup: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '1' },
    'gap-ms': { type: 'string', default: '10' },
    profile: { type: 'string' },
    'profile-agent': { type: 'string' },
    tmpfs: { type: 'boolean', default: false },
    binary: { type: 'boolean', default: false },
    against: { type: 'string' },
  } as const;
  const { values } = parseArgs({
    options: withShell ? { ...options, shell: { type: 'boolean', default: false } } : options,
  });
  const profileAgent = values['profile-agent'];
  return {
    runs: integerOption('runs', values.runs, 1),
    warmup: integerOption('warmup', values.warmup, 0),
    rounds: integerOption('rounds', values.rounds, 1),
    gapMs: integerOption('gap-ms', values['gap-ms'], 0),
    profile: values.profile,
    profileAgentDir: profileAgent ? path.resolve(profileAgent) : undefined,
    tmpfs: values.tmpfs,
    shell: 'shell' in values && values.shell === true,
    binary: values.binary,
    against: values.against?.split(' ').filter((part) => part !== ''),
  };
}

export interface TriggerBench {
  coordinator: BenchCoordinator;
  agent: BenchAgent;
  /** `/v1/triggers/<id>/run` */
  route: string;
  probe: ReturnType<typeof probeJobMoments>;
  /** After `--gap-ms`, re-anchors the wall clock and makes one `POST <route> {ref: 'main'}`, timed. */
  call(): Promise<TimedCall>;
  /** With `--against`: the second agent, its own trigger on the same workflow, and its call. */
  other: { agent: BenchAgent; route: string; call(): Promise<TimedCall> } | null;
  /**
   * Prints the machine line, makes the warm-up calls, then `--rounds` rounds of `--runs` calls
   * (under `--profile`), printing each round's `headline` as `round <n>: <label>`. Returns every
   * measured sample. With `--against`, each call of the first agent is followed by one of the
   * second (`other`), each round prints both and the ratio of their p50s, and `other` holds the
   * second agent's samples.
   */
  measure<S>(
    once: (call: () => Promise<TimedCall>) => Promise<S>,
    label: string,
    headline: (sample: S) => number,
  ): Promise<{ all: S[]; other: S[] }>;
  /** Stops the probes, the agent and the coordinator. */
  close(): Promise<void>;
  /** Prints the CPU profiles the stopped agent wrote (`--profile-agent`), if asked for. */
  printAgentProfiles(): void;
}

/** The headline's last line: its p50 against the goal, and its p99. */
export function printVerdict(total: LatencySummary, goalP50Ms: number): void {
  const verdict = total.p50 < goalP50Ms ? 'meets' : 'MISSES';
  console.log(
    `\np50 ${total.p50.toFixed(2)} ms (goal < ${goalP50Ms} ms: ${verdict} the goal); p99 ${total.p99.toFixed(2)} ms`,
  );
}

export interface TimedCall {
  call: number;
  answered: number;
  res: JsonResponse;
}

/** Starts the coordinator and the agent with `workflow` (YAML text) and seeds its trigger and token. */
export async function startTriggerBench(
  options: TriggerBenchOptions,
  setup: { workflowName: string; workflow: string; responseMode: 'async' | 'sync' },
): Promise<TriggerBench> {
  const coordinator = await startBenchCoordinator();
  let agent: BenchAgent | undefined;
  let otherAgent: BenchAgent | undefined;
  let probe: ReturnType<typeof probeJobMoments> | undefined;
  const client = new JsonClient(coordinator.url);
  const stop = async () => {
    probe?.detach();
    try {
      client.close();
      await agent?.close();
      await otherAgent?.close();
    } finally {
      await coordinator.close();
    }
  };
  try {
    const { profileAgentDir } = options;
    if (profileAgentDir) fs.mkdirSync(profileAgentDir, { recursive: true });
    agent = await startBenchAgent(coordinator, {
      workflows: { [setup.workflowName]: setup.workflow },
      ...(profileAgentDir ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profileAgentDir}`] } : {}),
      ...(options.tmpfs ? { parentDir: '/dev/shm' } : {}),
      binary: options.binary,
    });
    if (options.binary) console.log('the agent runs as the single executable agent/dist/drover-agent');
    if (options.tmpfs)
      console.log(
        "DIAGNOSIS RUN: the agent's state directory is on tmpfs (fsync costs nothing): not the product's figures",
      );
    const clock = new WallClock();
    const caller = async (agentId: string) => {
      const triggerId = await seedTrigger(coordinator.coordinator, coordinator.orgId, coordinator.ownerId, {
        agentId,
        workflowName: setup.workflowName,
        responseMode: setup.responseMode,
      });
      const token = await seedApiToken(coordinator.coordinator, coordinator.orgId, coordinator.ownerId, [
        { type: 'trigger', triggerIds: [triggerId] },
      ]);
      const route = `/v1/triggers/${triggerId}/run`;
      const headers = { authorization: `Bearer ${token}` };
      const call = async (): Promise<TimedCall> => {
        await sleep(options.gapMs);
        clock.anchor();
        const at = clock.now();
        const res = await client.post(route, { ref: 'main' }, headers);
        return { call: at, answered: clock.now(), res };
      };
      return { route, call };
    };
    const main = await caller(agent.agentId);
    let other: TriggerBench['other'] = null;
    if (options.against) {
      otherAgent = await startBenchAgent(coordinator, {
        workflows: { [setup.workflowName]: setup.workflow },
        ...(options.tmpfs ? { parentDir: '/dev/shm' } : {}),
        command: options.against,
      });
      other = { agent: otherAgent, ...(await caller(otherAgent.agentId)) };
      console.log(`against: a second agent, \`${options.against.join(' ')}\`, its calls alternating with the first's`);
    }
    probe = probeJobMoments(coordinator.coordinator, clock);
    return {
      coordinator,
      agent,
      route: main.route,
      probe,
      call: main.call,
      other,
      async measure(once, label, headline) {
        console.log(
          `machine: ${machineNote()}; ${options.runs} sequential calls per round, ${options.rounds} round(s), ${options.warmup} warm-up calls, ${options.gapMs} ms between calls`,
        );
        for (let i = 0; i < options.warmup; i++) {
          await once(main.call);
          if (other) await once(other.call);
        }
        const all: Awaited<ReturnType<typeof once>>[] = [];
        const againstAll: typeof all = [];
        await withCpuProfile(options.profile, async () => {
          for (let round = 0; round < options.rounds; round++) {
            const samples: typeof all = [];
            const againstSamples: typeof all = [];
            for (let i = 0; i < options.runs; i++) {
              samples.push(await once(main.call));
              if (other) againstSamples.push(await once(other.call));
            }
            all.push(...samples);
            againstAll.push(...againstSamples);
            const mine = summarize(samples.map(headline));
            console.log(formatLatency(`round ${round + 1}: ${label}`, mine));
            if (other) {
              const theirs = summarize(againstSamples.map(headline));
              console.log(formatLatency(`round ${round + 1}: against`, theirs));
              console.log(
                `round ${round + 1}: this / against p50 ${(mine.p50 / theirs.p50).toFixed(3)}, p99 ${(mine.p99 / theirs.p99).toFixed(3)}`,
              );
            }
          }
        });
        return { all, other: againstAll };
      },
      close: stop,
      printAgentProfiles() {
        if (profileAgentDir) printAgentProfiles(profileAgentDir);
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function printAgentProfiles(dir: string): void {
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const full = path.join(dir, file);
    const profile = JSON.parse(fs.readFileSync(full, 'utf8')) as Parameters<typeof summarizeProfile>[0];
    console.log(`agent CPU profile ${full} (whole life of the daemon, start-up included):`);
    console.log(summarizeProfile(profile));
  }
}
