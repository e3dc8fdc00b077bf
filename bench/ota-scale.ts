/**
 * Benchmark: a publish to 100,000 devices on one coordinator. Goal: every device has its `deploy`
 * event less than 10 s after the publish. This machine caps a process at 20,000 file descriptors,
 * so 100,000 agents cannot hold real streams here: the coordinator's own work for 100,000 devices
 * is measured with in-process streams, the cost of real sockets and agents is measured on 10,000,
 * and the two make the projection.
 *
 *   pnpm bench bench/ota-scale.ts [--devices 100000] [--sockets 10000] [--sample 5000] [--profile <file>]
 *                                 [--statements] [--without spread]
 *
 * The coordinator is real and in this process (createCoordinator, SQLite, log level warn). Every
 * publish goes through the management API (`POST .../releases/:id/publish`, no staged rollout: the
 * whole channel at once), which evaluates the channel's bindings (an update job each, committed in
 * chunks of 250) and hands each job to its agent's stream as a `deploy` event.
 *
 * 1. Sockets: `--sockets` simulated agents in a child process (bench/lib/fleet-worker.ts), each with
 *    its own key, enrolled and holding its signed stream, accepting the update jobs their events
 *    bring and asking for their signed manifest (as the reference agent does first; they do not
 *    start them), their reports over 2,000 connections. The time from the publish call to
 *    the last device's event, on the wall clock.
 * 2. In-process streams: agents enrolled through the repositories, bound through the API, each
 *    with a stream opened on the coordinator's own stream registry (`ctx.streams.connect`, what
 *    `GET /v1/agent/stream` does once the signature is checked) whose sink keeps the instant of the
 *    first `deploy` event instead of writing to a socket. Published twice: to `--sockets` of them
 *    (the same count as step 1, on a database of about step 1's size), then, with the rest of the
 *    `--devices` enrolled, to all of them. Probes split each publish
 *    into the evaluations (bindings read, plans, job rows committed) and the rest (jobs read back,
 *    events built and written), by wall time and by this process's CPU time.
 * 3. Manifests: the devices ask for their signed manifest after their event. `desiredManifest`
 *    (what `GET /v1/agent/deploy/desired` answers) for `--sample` of the 100,000 devices, on one
 *    core: the rate, and the CPU time 100,000 of them take.
 *
 * Projection for 100,000 devices on real sockets: step 2's time for all of them, plus 100,000 times
 * what a real device added per device in step 1 (step 1's time minus step 2's for the same count,
 * divided by that count: socket writes, the kernel, the agents' `accept` reports answered meanwhile;
 * the agents accept at a random moment within the events' `startWithinMs`, the publish's spread).
 * The agents of step 1 and the coordinator share two cores. Diagnoses: `--statements` prints
 * what each SQLite statement cost per device in the publish to all of them (bench/lib/sqlite-statements.ts);
 * `--without spread` sends the events without `startWithinMs`, so that every agent accepts at once.
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { desiredManifest } from '@drover/coordinator';
import { BENCH_OWNER, startBenchCoordinator } from './lib/coordinator.js';
import {
  appWithDevices,
  fleetEnvironment,
  signIn,
  storageToken,
  UPDATE_WORKFLOW,
  uploadArtifact,
} from './lib/fleet-setup.js';
import { epochMs, mapLimit } from './lib/fleet-sim.js';
import { FleetWorker } from './lib/fleet-worker.js';
import { integerOption } from './lib/options.js';
import { withCpuProfile } from './lib/profile.js';
import { countStatements, printSqliteStatements } from './lib/sqlite-statements.js';
import { machineNote, writeJsonResult } from './lib/report.js';
import { seedAgent } from './lib/seed.js';

const GOAL_MS = 10_000;
const GOAL_DEVICES = 100_000;

const { values } = parseArgs({
  options: {
    devices: { type: 'string', default: '100000' },
    sockets: { type: 'string', default: '10000' },
    sample: { type: 'string', default: '5000' },
    profile: { type: 'string' },
    statements: { type: 'boolean', default: false },
    without: { type: 'string' },
  },
});
if (values.without !== undefined && values.without !== 'spread')
  throw new Error('--without: `spread` is the only choice');
const devices = integerOption('devices', values.devices, 1);
const sockets = integerOption('sockets', values.sockets, 1);
const sample = integerOption('sample', values.sample, 1);
if (sockets > devices) throw new Error('--sockets: at most --devices');

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** What one publish took: to the last device's event, and where the coordinator's time went. */
interface Publish {
  devices: number;
  /** From the call to its answer, and to the last device's `deploy` event (wall clock). */
  answeredMs: number;
  lastEventMs: number;
  p50EventMs: number;
  /** This process's CPU time from the call to the last event (the coordinator's, with the in-process sinks). */
  cpuMs: number;
  /** Inside the evaluations (`ota.evaluateIds`): wall and CPU time. */
  evaluationWallMs: number;
  evaluationCpuMs: number;
}

console.log(
  `OTA at scale: a publish to ${devices.toLocaleString('en-US')} devices (in-process streams) and to ` +
    `${sockets.toLocaleString('en-US')} (real sockets); SQLite; ${machineNote()}`,
);
const statements = values.statements ? countStatements() : null;
const { env } = await fleetEnvironment();
// `--without spread` (a diagnosis): no `startWithinMs` in the events, so every agent accepts at once.
const bench = await startBenchCoordinator(
  values.without === 'spread' ? { ...env, DROVER_UPDATE_STARTS_PER_SECOND: '1000000' } : env,
);
const { ctx } = bench.coordinator;
const origin = bench.url;
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 4 });
const fleet = new FleetWorker({ childProcess: true });
try {
  const { session, manage } = await signIn(origin, BENCH_OWNER, keepAlive, bench.orgId);
  const token = await storageToken(manage, 'ota scale bench');
  const release = async (appId: string, version: string): Promise<string> => {
    const fileId = await uploadArtifact(`${origin}/v1`, token, `build ${version} of ${appId}`);
    return (await manage(`/apps/${appId}/releases`, { version, artifactFileId: fileId }, 201)).id as string;
  };

  // Evaluations timed by the probe on the engine, for the publish under way.
  const evaluation = { wallMs: 0, cpuMs: 0 };
  const originalEvaluate = ctx.ota.evaluateIds;
  ctx.ota.evaluateIds = async (ids, reason) => {
    const began = performance.now();
    const cpu = cpuMs();
    try {
      return await originalEvaluate.call(ctx.ota, ids, reason);
    } finally {
      evaluation.wallMs += performance.now() - began;
      evaluation.cpuMs += cpuMs() - cpu;
    }
  };

  /** Publishes and waits until `arrived()` devices of `count` have their event; `arrivals` are epoch ms. */
  const publish = async (
    appId: string,
    releaseId: string,
    count: number,
    arrivals: () => Promise<number[]>,
  ): Promise<Publish> => {
    evaluation.wallMs = 0;
    evaluation.cpuMs = 0;
    const cpu = cpuMs();
    const began = epochMs();
    await manage(`/apps/${appId}/releases/${releaseId}/publish`, {});
    const answeredMs = epochMs() - began;
    const deadline = Date.now() + 300_000;
    let times = await arrivals();
    while (times.length < count) {
      if (Date.now() > deadline)
        throw new Error(`only ${times.length} of ${count} devices had their event after 300 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      times = await arrivals();
    }
    const used = cpuMs() - cpu;
    const sorted = times.map((t) => t - began).sort((a, b) => a - b);
    return {
      devices: count,
      answeredMs,
      lastEventMs: sorted.at(-1)!,
      p50EventMs: sorted[Math.floor(sorted.length / 2)]!,
      cpuMs: used,
      evaluationWallMs: evaluation.wallMs,
      evaluationCpuMs: evaluation.cpuMs,
    };
  };
  const report = (label: string, p: Publish) =>
    console.log(
      `${label}: answered ${seconds(p.answeredMs)}, events p50 ${seconds(p.p50EventMs)}, ` +
        `last ${seconds(p.lastEventMs)}; CPU ${seconds(p.cpuMs)}, in the evaluations ` +
        `${seconds(p.evaluationWallMs)} (CPU ${seconds(p.evaluationCpuMs)})`,
    );

  // ---- 1. Real sockets -----------------------------------------------------------------------------
  let started = performance.now();
  const socketAgents = await fleet.setup({
    origin,
    session,
    orgId: bench.orgId,
    count: sockets,
    labels: { os: 'linux', arch: 'x64' },
    workflows: [UPDATE_WORKFLOW],
    capacity: 4,
    runMs: 0,
    manifests: true,
    // Real devices report over a connection each; as many as the file descriptors allow beside the streams.
    reportSockets: 2_000,
  });
  const socketApp = (await appWithDevices(manage, 'scale-sockets', socketAgents)).id;
  console.log(
    `${sockets.toLocaleString('en-US')} agents enrolled, streaming (a child process) and bound in ` +
      `${seconds(performance.now() - started)}`,
  );
  const socketRelease = await release(socketApp, '1.0.0');
  const socketPublish = await publish(socketApp, socketRelease, sockets, async () =>
    (await fleet.updates(socketRelease)).deploys.map((d) => d.receivedAt),
  );
  report(`1. ${sockets.toLocaleString('en-US')} devices on real sockets`, socketPublish);
  await fleet.close();

  // ---- 2. In-process streams ------------------------------------------------------------------------
  /** The first `deploy` event of each agent since the last reset (epoch ms). */
  const firstDeploy = new Map<string, number>();
  let counting: ReadonlySet<string> = new Set();
  let seeded = 0;
  /** Enrolls `count` agents and opens an in-process stream for each. */
  const inProcessAgents = async (count: number): Promise<string[]> => {
    started = performance.now();
    // Through the repositories, many at once (their writes share group commits).
    const ids = await mapLimit(
      Array.from({ length: count }, () => seeded++),
      500,
      (index) => seedAgent(bench.coordinator, bench.orgId, index, []),
    );
    await mapLimit(ids, 500, async (agentId) => {
      await ctx.streams.connect(
        { id: agentId, orgId: bench.orgId },
        {
          write(chunk) {
            if (chunk.startsWith('event: deploy') && counting.has(agentId) && !firstDeploy.has(agentId)) {
              firstDeploy.set(agentId, epochMs());
            }
            return true;
          },
          end() {},
          onClose() {},
        },
        4,
      );
    });
    console.log(
      `${count.toLocaleString('en-US')} agents enrolled (repositories) with in-process streams in ` +
        `${seconds(performance.now() - started)}`,
    );
    return ids;
  };
  /** Binds the agents to a new application, then publishes a release of it (profiled with `profile`). */
  const inProcess = async (slug: string, ids: readonly string[], profile?: string) => {
    started = performance.now();
    const appId = (await appWithDevices(manage, slug, ids)).id;
    console.log(`bound to an application in ${seconds(performance.now() - started)}`);
    const releaseId = await release(appId, '1.0.0');
    statements?.take();
    firstDeploy.clear();
    counting = new Set(ids);
    return withCpuProfile(profile, () => publish(appId, releaseId, ids.length, async () => [...firstDeploy.values()]));
  };
  // The same count as step 1 first, on a database of about the same size as step 1's.
  const agentIds = await inProcessAgents(sockets);
  const fewPublish = await inProcess('scale-in-process-few', agentIds);
  report(`2. ${sockets.toLocaleString('en-US')} devices on in-process streams`, fewPublish);
  agentIds.push(...(await inProcessAgents(devices - sockets)));
  const allPublish = await inProcess('scale-in-process-all', agentIds, values.profile);
  report(`2. ${devices.toLocaleString('en-US')} devices on in-process streams`, allPublish);
  if (statements) printSqliteStatements(statements.take(), devices, 'device');

  // ---- 3. Manifests --------------------------------------------------------------------------------
  const callers = agentIds.slice(0, Math.min(sample, agentIds.length)).map((id) => ({ id, orgId: bench.orgId }));
  for (const agent of callers.slice(0, 200)) await desiredManifest(ctx, agent); // warm-up
  const cpu = cpuMs();
  const began = performance.now();
  let entries = 0;
  for (const agent of callers) entries += (await desiredManifest(ctx, agent)).apps.length;
  const manifestWallMs = performance.now() - began;
  const manifestCpuMs = cpuMs() - cpu;
  const microsPerManifest = (manifestWallMs * 1000) / callers.length;
  console.log(
    `3. manifests: ${callers.length.toLocaleString('en-US')} devices (${entries.toLocaleString('en-US')} signed entries) in ` +
      `${seconds(manifestWallMs)} (CPU ${seconds(manifestCpuMs)}), ${microsPerManifest.toFixed(0)} µs each: ` +
      `${seconds((microsPerManifest * devices) / 1000)} of one core for ${devices.toLocaleString('en-US')} devices`,
  );

  // ---- Projection ----------------------------------------------------------------------------------
  const perSocketMs = Math.max(0, socketPublish.lastEventMs - fewPublish.lastEventMs) / sockets;
  const projectedMs = allPublish.lastEventMs + perSocketMs * devices;
  console.log(
    `projection for ${devices.toLocaleString('en-US')} devices on real sockets: ${seconds(allPublish.lastEventMs)} ` +
      `(in-process) + ${devices.toLocaleString('en-US')} x ${(perSocketMs * 1000).toFixed(1)} µs (a real device's ` +
      `extra, from ${sockets.toLocaleString('en-US')}) = ${seconds(projectedMs)} ` +
      (devices >= GOAL_DEVICES
        ? `(goal < ${seconds(GOAL_MS)}: ${projectedMs < GOAL_MS ? 'met' : 'NOT met'})`
        : `(the goal, < ${seconds(GOAL_MS)}, is for ${GOAL_DEVICES.toLocaleString('en-US')} devices)`),
  );
  writeJsonResult('ota-scale', {
    goalMs: GOAL_MS,
    sockets: socketPublish,
    inProcessSame: fewPublish,
    inProcessAll: allPublish,
    manifests: { devices: callers.length, entries, wallMs: manifestWallMs, cpuMs: manifestCpuMs },
    perSocketMs,
    projectedMs,
  });
} finally {
  ctx.streams.close();
  keepAlive.destroy();
  await fleet.close().catch(() => undefined);
  await bench.close();
}
