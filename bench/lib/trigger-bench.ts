import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sleep, startBenchAgent, type BenchAgent } from './agent.js';
import { startBenchCoordinator, type BenchCoordinator } from './coordinator.js';
import { formatLatency, JsonClient, probeJobMoments, summarize, WallClock, type JsonResponse } from './latency.js';
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
}

/**
 * `[--runs <defaultRuns>] [--warmup 20] [--rounds 1] [--gap-ms 10] [--profile <file>]
 * [--profile-agent <dir>] [--tmpfs] [--binary]`, and `[--shell]` when `withShell`.
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
  };
}

export interface TriggerBench {
  coordinator: BenchCoordinator;
  agent: BenchAgent;
  /** `/v1/triggers/<id>/run` */
  route: string;
  probe: ReturnType<typeof probeJobMoments>;
  /** After `--gap-ms`, re-anchors the wall clock and makes one `POST <route> {ref: 'main'}`, timed. */
  call(): Promise<{ call: number; answered: number; res: JsonResponse }>;
  /**
   * Prints the machine line, makes the warm-up calls, then `--rounds` rounds of `--runs` calls
   * (under `--profile`), printing each round's `headline` as `round <n>: <label>`. Returns every
   * measured sample.
   */
  measure<S>(once: () => Promise<S>, label: string, headline: (sample: S) => number): Promise<S[]>;
  /** Stops the probes, the agent and the coordinator. */
  close(): Promise<void>;
  /** Prints the CPU profiles the stopped agent wrote (`--profile-agent`), if asked for. */
  printAgentProfiles(): void;
}

/** Starts the coordinator and the agent with `workflow` (YAML text) and seeds its trigger and token. */
export async function startTriggerBench(
  options: TriggerBenchOptions,
  setup: { workflowName: string; workflow: string; responseMode: 'async' | 'sync' },
): Promise<TriggerBench> {
  const coordinator = await startBenchCoordinator();
  let agent: BenchAgent | undefined;
  let probe: ReturnType<typeof probeJobMoments> | undefined;
  const client = new JsonClient(coordinator.url);
  const stop = async () => {
    probe?.detach();
    try {
      client.close();
      await agent?.close();
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
    const triggerId = await seedTrigger(coordinator.coordinator, coordinator.orgId, coordinator.ownerId, {
      agentId: agent.agentId,
      workflowName: setup.workflowName,
      responseMode: setup.responseMode,
    });
    const token = await seedApiToken(coordinator.coordinator, coordinator.orgId, coordinator.ownerId, [
      { type: 'trigger', triggerIds: [triggerId] },
    ]);
    const route = `/v1/triggers/${triggerId}/run`;
    const headers = { authorization: `Bearer ${token}` };
    const clock = new WallClock();
    probe = probeJobMoments(coordinator.coordinator, clock);
    return {
      coordinator,
      agent,
      route,
      probe,
      async call() {
        await sleep(options.gapMs);
        clock.anchor();
        const call = clock.now();
        const res = await client.post(route, { ref: 'main' }, headers);
        return { call, answered: clock.now(), res };
      },
      async measure(once, label, headline) {
        console.log(
          `machine: ${machineNote()}; ${options.runs} sequential calls per round, ${options.rounds} round(s), ${options.warmup} warm-up calls, ${options.gapMs} ms between calls`,
        );
        for (let i = 0; i < options.warmup; i++) await once();
        const all: Awaited<ReturnType<typeof once>>[] = [];
        await withCpuProfile(options.profile, async () => {
          for (let round = 0; round < options.rounds; round++) {
            const samples: typeof all = [];
            for (let i = 0; i < options.runs; i++) samples.push(await once());
            all.push(...samples);
            console.log(formatLatency(`round ${round + 1}: ${label}`, summarize(samples.map(headline))));
          }
        });
        return all;
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
