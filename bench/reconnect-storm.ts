/**
 * Benchmark: a reconnect storm (docs/operations.md, "Reconnect storms"). Goals: after the
 * coordinator is killed (SIGKILL) and started again on the same port and data, every agent of a
 * 10,000-agent fleet has its stream back within 15 s of the kill; operator calls keep answering
 * meanwhile (p99 < 200 ms from the restart until the last agent is back); the coordinator's RSS
 * during the storm stays within 1.3 x its steady state.
 *
 *   ulimit -n 20000; pnpm build && pnpm bench bench/reconnect-storm.ts --agents 10000
 *   options: --budget <stream opens per second> (DROVER_RECONNECT_BUDGET); BENCH_JSON_DIR=<dir> writes the figures
 *   profile: --profile <dir> (the restarted coordinator, from its start until the fleet is back)
 *
 * The coordinator is the real `drover-coordinator start` in a child process (SQLite). The agents
 * are the agent's own `StreamClient` (its backoff, the `retry` hint, 503 with `Retry-After`), each
 * with its own Ed25519 key and reporting its workflows and labels before each attempt as the
 * daemon does, all in a second child process (bench/lib/storm-fleet.ts) so that their signing
 * stays off this one, which kills and restarts the coordinator, probes the operator API every
 * 100 ms (`GET /v1/orgs/:orgId` with a dashboard session) and reads the coordinator's RSS every
 * 250 ms. All three share the machine's cores. Every agent connects from 127.0.0.1, so the
 * per-address connection limit is off (DROVER_MAX_CONNECTIONS_PER_CLIENT=0). The kernel's
 * listen-queue overflows are read from /proc/net/netstat (the whole machine's) before and after.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateEd25519KeyPair } from '@drover/shared';
import { CHILD_OWNER, memoryMb, startChildCoordinator, type ChildCoordinator } from './lib/child-coordinator.js';
import { fleetEnvironment, signIn } from './lib/fleet-setup.js';
import { jsonCall, mapLimit, request } from './lib/fleet-sim.js';
import { integerOption } from './lib/options.js';
import { newestCpuProfile, summarizeProfile } from './lib/profile.js';
import { machineNote, writeJsonResult } from './lib/report.js';
import type { StormFleetMessage, StormFleetStart } from './lib/storm-fleet.js';

const GOALS = { allBackS: 15, apiP99Ms: 200, rssRatio: 1.3 };

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '10000' },
    budget: { type: 'string' },
    profile: { type: 'string' },
  },
});
const N = integerOption('agents', values.agents, 1);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted: readonly number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** TcpExt ListenOverflows of the whole machine (/proc/net/netstat). */
function listenOverflows(): number {
  const lines = fs.readFileSync('/proc/net/netstat', 'utf8').split('\n');
  const header = lines.find((l) => l.startsWith('TcpExt:'))!.split(/\s+/);
  const values = lines.filter((l) => l.startsWith('TcpExt:'))[1]!.split(/\s+/);
  return Number(values[header.indexOf('ListenOverflows')]);
}

console.log(`reconnect storm: ${N.toLocaleString('en-US')} agents; ${machineNote()}`);
const { env } = await fleetEnvironment();
if (values.budget) env.DROVER_RECONNECT_BUDGET = String(integerOption('budget', values.budget, 1));
let coordinator: ChildCoordinator = await startChildCoordinator({ env });
const port = Number(new URL(coordinator.url).port);
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 16 });
const fleetProcess = fork(fileURLToPath(new URL('./lib/storm-fleet.ts', import.meta.url)), [], {
  execArgv: process.execArgv,
});
try {
  const { session, orgId, manage } = await signIn(coordinator.url, CHILD_OWNER, keepAlive);
  let began = performance.now();
  const agents = await mapLimit(
    Array.from({ length: N }, (_, i) => i),
    32,
    async (i) => {
      const keys = generateEd25519KeyPair();
      const { token } = await manage('/enrollment-tokens', {}, 201);
      const enrolled = await jsonCall<{ agentId: string }>(`${coordinator.url}/v1/agent/enroll`, {
        method: 'POST',
        body: {
          enrollmentToken: token,
          publicKey: keys.publicKey,
          hostname: `storm-${i}`,
          os: 'linux',
          agentVersion: '0.1.0',
        },
        expected: 201,
      });
      return { agentId: enrolled.agentId, privateKey: keys.privateKey };
    },
  );
  console.log(`enrolled in ${((performance.now() - began) / 1000).toFixed(1)} s`);

  // Each agent's latest connect (wall clock), and the shed attempts.
  const connectedAt = new Array<number>(N).fill(0);
  let shed = 0;
  fleetProcess.on('message', (m: StormFleetMessage) => {
    if (m.type === 'connected') connectedAt[m.index] = m.at;
    else if (m.type === 'shed') shed += 1;
  });
  const allAfter = async (since: number, timeoutMs: number) => {
    const until = Date.now() + timeoutMs;
    while (connectedAt.some((t) => t < since)) {
      if (Date.now() > until) {
        const missing = connectedAt.filter((t) => t < since).length;
        throw new Error(`${missing} agents not connected after ${timeoutMs / 1000} s`);
      }
      await sleep(100);
    }
  };
  began = Date.now();
  fleetProcess.send({ type: 'start', origin: coordinator.url, agents } satisfies StormFleetStart);
  await allAfter(began, 120_000);
  console.log(
    `first connect: all ${N.toLocaleString('en-US')} in ${((Date.now() - began) / 1000).toFixed(1)} s (${shed} shed)`,
  );
  await sleep(5_000);
  const steadyRss = memoryMb(coordinator.pid);

  // The operator's probe, from now on: one call every 100 ms (failures while it is down are counted).
  const probes: { at: number; ms: number; ok: boolean }[] = [];
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const at = Date.now();
      const answer = await request(`http://127.0.0.1:${port}/v1/orgs/${orgId}`, {
        headers: { authorization: `Bearer ${session}` },
        agent: keepAlive,
      }).catch(() => null);
      probes.push({ at, ms: Date.now() - at, ok: answer?.status === 200 });
      await sleep(100);
    }
  })();

  const overflowsBefore = listenOverflows();
  const shedBefore = shed;
  const killedAt = Date.now();
  await coordinator.kill();
  const profileDir = values.profile && path.resolve(values.profile);
  coordinator = await startChildCoordinator({
    env,
    dataDir: coordinator.dataDir,
    port,
    ...(profileDir ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
  });
  const listeningAt = Date.now();
  let peakRss = memoryMb(coordinator.pid);
  const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, memoryMb(coordinator.pid))), 250);
  try {
    await allAfter(killedAt, 90_000);
  } finally {
    clearInterval(rssTimer);
  }
  const allBackAt = Date.now();
  probing = false;
  await probe;

  const back = connectedAt.map((t) => (t - killedAt) / 1000).sort((a, b) => a - b);
  const during = probes.filter((p) => p.at >= listeningAt && p.at <= allBackAt);
  const latencies = during.map((p) => p.ms).sort((a, b) => a - b);
  const result = {
    agents: N,
    budgetPerSecond: Number(env.DROVER_RECONNECT_BUDGET ?? 1000),
    restartS: (listeningAt - killedAt) / 1000,
    backS: { p50: percentile(back, 50), p99: percentile(back, 99), all: back.at(-1)! },
    shedAttempts: shed - shedBefore,
    api: {
      probes: during.length,
      failed: during.filter((p) => !p.ok).length,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      maxMs: latencies.at(-1) ?? NaN,
      // When the slowest calls began, in seconds after the restarted coordinator listened.
      slowestAtS: [...during]
        .sort((a, b) => b.ms - a.ms)
        .slice(0, 3)
        .map((p) => Number(((p.at - listeningAt) / 1000).toFixed(1))),
    },
    rssMb: { steady: steadyRss, peak: peakRss, ratio: peakRss / steadyRss },
    listenOverflows: listenOverflows() - overflowsBefore,
  };
  console.log(
    `restart: listening ${result.restartS.toFixed(1)} s after the kill; agents back p50 ${result.backS.p50.toFixed(1)} s, ` +
      `p99 ${result.backS.p99.toFixed(1)} s, all ${result.backS.all.toFixed(1)} s after the kill; ` +
      `${result.shedAttempts.toLocaleString('en-US')} attempts shed (503 + Retry-After); ${result.listenOverflows} listen-queue overflows`,
  );
  console.log(
    `operator API during the storm: ${result.api.probes} calls, ${result.api.failed} failed, ` +
      `p50 ${result.api.p50Ms} ms, p99 ${result.api.p99Ms} ms, max ${result.api.maxMs} ms ` +
      `(the slowest began ${result.api.slowestAtS.map((s) => `${s} s`).join(', ')} after it listened)`,
  );
  console.log(
    `coordinator RSS: steady ${steadyRss.toFixed(0)} MB, peak during the storm ${peakRss.toFixed(0)} MB (${result.rssMb.ratio.toFixed(2)} x)`,
  );
  const met = [
    result.backS.all < GOALS.allBackS,
    result.api.p99Ms < GOALS.apiP99Ms && result.api.failed === 0,
    result.rssMb.ratio <= GOALS.rssRatio,
  ];
  console.log(
    `summary: all back ${result.backS.all.toFixed(1)} s (goal < ${GOALS.allBackS}: ${met[0] ? 'met' : 'NOT met'}), ` +
      `API p99 ${result.api.p99Ms} ms (goal < ${GOALS.apiP99Ms}: ${met[1] ? 'met' : 'NOT met'}), ` +
      `RSS ${result.rssMb.ratio.toFixed(2)} x (goal <= ${GOALS.rssRatio}: ${met[2] ? 'met' : 'NOT met'})`,
  );
  writeJsonResult('reconnect-storm', { ...result, goals: GOALS });
  if (profileDir) {
    await coordinator.stop(); // the profile is written when the process ends
    const newest = newestCpuProfile(profileDir);
    if (newest)
      console.log(`coordinator profile ${newest}:\n${summarizeProfile(JSON.parse(fs.readFileSync(newest, 'utf8')))}`);
  }
} finally {
  fleetProcess.kill();
  keepAlive.destroy();
  await coordinator.close();
}
