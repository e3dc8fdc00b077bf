/**
 * Benchmark: an over-the-air rollout to a simulated fleet (docs/ota.md). Goal: signed-manifest
 * issuance (`GET /v1/agent/deploy/desired`) at least 0.5 x the raw Ed25519 signing rate measured
 * in the same run.
 *
 *   pnpm build && pnpm bench bench/fleet.ts --agents 1000
 *   pnpm build && pnpm bench bench/fleet.ts --agents 10000
 *   options: --apps K (bindings per agent, default 1) | --concurrency 64 | --duration 10 | --source
 *   profile: --profile <dir> (the coordinator's whole run, written when it stops);
 *            --profile-issuance <file> (measurement 4 alone, in this process)
 *
 * The coordinator is the real `drover-coordinator start` in a CHILD process (the built
 * `coordinator/dist`; `--source`: TypeScript through tsx), so that its RSS and CPU time are its
 * own (/proc/<pid>). This process simulates the fleet: N agents, each with its own Ed25519 key,
 * enrolled through `POST /v1/agent/enroll` with an enrollment token made through the dashboard
 * API, each holding its own signed `GET /v1/agent/stream` connection (bench/lib/fleet-sim.ts).
 * They are bound to K applications (N x K bindings) through the dashboard API.
 *
 * Measured:
 * 1. Coordinator RSS per connected agent: VmRSS after every stream is open and idle, minus VmRSS
 *    before the first one opened (same data in the database), divided by N.
 * 2. Publish fan-out: a release of the first application is published (`POST .../publish`); the
 *    time from the call until each device's first `deploy` event arrived on its stream
 *    (p50, p99, last = every device has it), and when the publish call itself answered.
 * 3. Signed-manifest issuance over HTTP: `--concurrency` loops of signed `GET /v1/agent/deploy/desired`,
 *    round robin over the agents, for `--duration` seconds after a 2 s warm-up: manifest entries
 *    per second (each answer holds K entries, each signed and with a fresh download URL), and the
 *    coordinator's CPU time per entry. The first answers' signatures are verified with the server
 *    key received at enrollment. Compared with the raw Ed25519 signing rate of node:crypto
 *    measured in this process (one core) over the canonical bytes of a real manifest payload.
 * 4. Signed-manifest issuance itself: the coordinator stopped, the same data directory opened by
 *    a coordinator built in THIS process (`createCoordinator`), and the function behind that
 *    endpoint (`desiredManifest`: bindings, releases and artifact read, desired state computed,
 *    a download URL presigned, the payload canonicalized (RFC 8785) and signed) called round robin
 *    over the agents for `--duration` seconds on one core: entries per second against the raw
 *    signing rate. This is the figure the goal names; measurement 3 adds what any signed request
 *    costs (verifying the agent's Ed25519 signature is slower than signing, ~2.5x here), HTTP, and
 *    a load generator signing its own requests on the same two cores.
 *
 * On 2 vCPUs this process (signing requests, reading 10,000 streams) and the coordinator share
 * the machine: figures are for the pair. 10,000 streams need ~10,000 file descriptors on each
 * side (`ulimit -n`).
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  generateEd25519KeyPair,
  manifestSigningBytes,
  privateKeyFromBase64,
  signBytes,
  verifyManifestEntry,
  type DesiredManifestResponse,
  type ManifestPayload,
} from '@drover/shared';
import { createCoordinator, createLogger, desiredManifest, loadConfig } from '@drover/coordinator';
import { CHILD_OWNER, cpuTimeMs, memoryMb, startChildCoordinator } from './lib/child-coordinator.js';
import {
  connectFleet,
  enrollFleet,
  fleetEnvironment,
  signIn,
  storageToken,
  uploadArtifact,
} from './lib/fleet-setup.js';
import type { SimAgent } from './lib/fleet-sim.js';
import { newestCpuProfile, summarizeProfile, withCpuProfile } from './lib/profile.js';
import { integerOption } from './lib/options.js';
import { machineNote, median } from './lib/report.js';

const GOAL_RATIO = 0.5;

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '1000' },
    apps: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '64' },
    duration: { type: 'string', default: '10' },
    source: { type: 'boolean', default: false },
    profile: { type: 'string' },
    'profile-issuance': { type: 'string' },
  },
});
const N = integerOption('agents', values.agents, 1);
const K = integerOption('apps', values.apps, 1);
const concurrency = integerOption('concurrency', values.concurrency, 1);
const durationS = integerOption('duration', values.duration, 1);

const ms = (v: number) => `${v.toFixed(v < 10 ? 1 : 0)} ms`;
const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const sleep = (t: number) => new Promise((resolve) => setTimeout(resolve, t));

console.log(`fleet: ${N} agents x ${K} application(s) = ${N * K} bindings; ${machineNote()}`);
const profileDir = values.profile && path.resolve(values.profile);
const coordinator = await startChildCoordinator({
  source: values.source,
  env: (await fleetEnvironment()).env,
  ...(profileDir ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
});
const origin = coordinator.url;
const base = `${origin}/v1`;
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: Math.max(concurrency, 64) });
const agents: SimAgent[] = [];
try {
  // ---- Setup through the public APIs -----------------------------------------------------------
  const { orgId, manage } = await signIn(origin, CHILD_OWNER, keepAlive);

  let started = performance.now();
  agents.push(...(await enrollFleet({ origin, manage, count: N, concurrency: 32 })));
  console.log(`enrolled ${N} agents in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const serverPublicKey = agents[0]!.serverPublicKey;

  const token = await storageToken(manage, 'fleet bench');
  const apps: { id: string; releaseId: string }[] = [];
  for (let k = 0; k < K; k++) {
    const app = await manage('/apps', { slug: `fleet-app-${k}`, updateWorkflowName: 'apply-update' }, 201);
    const fileId = await uploadArtifact(base, token, `fleet artifact ${k}`);
    const release = await manage(`/apps/${app.id}/releases`, { version: '1.0.0', artifactFileId: fileId }, 201);
    apps.push({ id: app.id as string, releaseId: release.id as string });
    for (let i = 0; i < N; i += 1000) {
      await manage(`/apps/${app.id}/devices`, { agentIds: agents.slice(i, i + 1000).map((a) => a.agentId) }, 201);
    }
    // Every application but the first is published now: the manifests then carry K desired releases.
    if (k > 0) await manage(`/apps/${app.id}/releases/${release.id}/publish`, {}, 200);
  }
  console.log(`${K} application(s), ${N * K} bindings`);

  // ---- 1. RSS per connected agent ----------------------------------------------------------------
  const { rssBefore, rssConnected, connectS } = await connectFleet(agents, origin, coordinator.pid);
  const perAgentKb = ((rssConnected - rssBefore) * 1024) / N;
  console.log(
    `streams: ${N} open in ${connectS.toFixed(1)} s; coordinator RSS ${rssBefore.toFixed(0)} MB -> ${rssConnected.toFixed(0)} MB: ${perAgentKb.toFixed(1)} KB per connected agent`,
  );

  // ---- 2. Publish fan-out --------------------------------------------------------------------------
  for (const a of agents) a.resetDeploys();
  const first = apps[0]!;
  const t0 = performance.now();
  await manage(`/apps/${first.id}/releases/${first.releaseId}/publish`, {}, 200);
  const answered = performance.now() - t0;
  const deadline = Date.now() + 300_000;
  while (agents.some((a) => a.firstDeployAt === null)) {
    if (Date.now() > deadline)
      throw new Error(`${agents.filter((a) => a.firstDeployAt === null).length} devices got no deploy event in 300 s`);
    await sleep(20);
  }
  const arrivals = agents.map((a) => a.firstDeployAt! - t0).sort((x, y) => x - y);
  const rssPublished = memoryMb(coordinator.pid);
  console.log(
    `publish -> deploy event on every device: publish answered ${ms(answered)}; first ${ms(arrivals[0]!)}, ` +
      `p50 ${ms(percentile(arrivals, 50))}, p99 ${ms(percentile(arrivals, 99))}, all ${N} ${ms(arrivals.at(-1)!)} ` +
      `(${Math.round(N / (arrivals.at(-1)! / 1000)).toLocaleString('en-US')} devices/s); RSS ${rssPublished.toFixed(0)} MB`,
  );

  // ---- 3. Manifest issuance vs raw signing -----------------------------------------------------------
  const manifestPath = '/v1/agent/deploy/desired';
  let verified = 0;
  let samplePayload: ManifestPayload | null = null;
  for (const a of agents.slice(0, 20)) {
    const answer = await a.signedGet(origin, manifestPath, keepAlive);
    const body = JSON.parse(answer.text) as DesiredManifestResponse;
    if (answer.status !== 200 || body.apps.length !== K)
      throw new Error(`desired: HTTP ${answer.status} ${answer.text}`);
    for (const entry of body.apps) {
      if (!verifyManifestEntry(entry, serverPublicKey)) throw new Error('a manifest entry does not verify');
      verified += 1;
      samplePayload ??= entry.payload;
    }
  }
  const load = async (seconds: number) => {
    let requests = 0;
    let entries = 0;
    let errors = 0;
    const latencies: number[] = [];
    const until = performance.now() + seconds * 1000;
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < until) {
          const agent = agents[next++ % agents.length]!;
          const began = performance.now();
          const answer = await agent.signedGet(origin, manifestPath, keepAlive);
          latencies.push(performance.now() - began);
          if (answer.status !== 200) {
            errors += 1;
            continue;
          }
          requests += 1;
          entries += countEntries(answer.text);
        }
      }),
    );
    return { requests, entries, errors, latencies: latencies.sort((x, y) => x - y) };
  };
  await load(2);
  const cpuBefore = cpuTimeMs(coordinator.pid);
  started = performance.now();
  const issued = await load(durationS);
  const elapsedS = (performance.now() - started) / 1000;
  const cpuUsedMs = cpuTimeMs(coordinator.pid) - cpuBefore;
  const entriesPerS = issued.entries / elapsedS;
  const cpuPerEntryUs = (cpuUsedMs * 1000) / issued.entries;

  const raw = rawSigningRate(manifestSigningBytes(samplePayload!), 3);
  console.log(
    `manifest issuance: ${Math.round(issued.requests / elapsedS).toLocaleString('en-US')} req/s, ` +
      `${Math.round(entriesPerS).toLocaleString('en-US')} signed entries/s (concurrency ${concurrency}, ${K} per answer), ` +
      `p50 ${ms(median(issued.latencies))}, p99 ${ms(percentile(issued.latencies, 99))}, ${issued.errors} errors; ` +
      `coordinator CPU ${cpuPerEntryUs.toFixed(0)} µs per entry (${verified} entries verified with the pinned key)`,
  );
  console.log(
    `raw Ed25519 signing (node:crypto, one core, ${manifestSigningBytes(samplePayload!).length}-byte payload): ` +
      `${Math.round(raw.perSecond).toLocaleString('en-US')} signatures/s (${raw.microsEach.toFixed(1)} µs each)`,
  );
  const httpRatio = entriesPerS / raw.perSecond;
  console.log(
    `over HTTP / raw signing: ${httpRatio.toFixed(2)}; ` +
      `by CPU: ${(raw.microsEach / cpuPerEntryUs).toFixed(2)} (raw µs per signature / coordinator µs per entry)`,
  );

  // ---- 4. Issuance itself, in this process -------------------------------------------------------
  await coordinator.stop();
  const local = await withCpuProfile(values['profile-issuance'], () =>
    issuanceInProcess(
      coordinator.dataDir,
      agents.map((a) => ({ id: a.agentId, orgId })),
      durationS,
    ),
  );
  const ratio = local.entriesPerS / raw.perSecond;
  console.log(
    `manifest issuance in process (desiredManifest, one core): ${Math.round(local.entriesPerS).toLocaleString('en-US')} ` +
      `signed entries/s (${local.microsEach.toFixed(1)} µs each; ${local.entries.toLocaleString('en-US')} entries)`,
  );
  console.log(
    `issuance / raw signing: ${ratio.toFixed(2)} (goal >= ${GOAL_RATIO}; ${ratio >= GOAL_RATIO ? 'meets' : 'BELOW'} the goal)`,
  );
} finally {
  for (const a of agents) a.close();
  keepAlive.destroy();
  await coordinator.close();
}
if (profileDir) {
  const newest = newestCpuProfile(profileDir);
  if (newest)
    console.log(`coordinator profile ${newest}:\n${summarizeProfile(JSON.parse(fs.readFileSync(newest, 'utf8')))}`);
}

/** Entries in a desired answer, counted without parsing it whole (the client must not be the bottleneck). */
function countEntries(text: string): number {
  let count = 0;
  for (let i = text.indexOf('"signature"'); i >= 0; i = text.indexOf('"signature"', i + 1)) count += 1;
  return count;
}

/** `desiredManifest` over the agents, round robin, in a coordinator built in this process on `dataDir`. */
async function issuanceInProcess(
  dataDir: string,
  callers: readonly { id: string; orgId: string }[],
  seconds: number,
): Promise<{ entriesPerS: number; microsEach: number; entries: number }> {
  const config = loadConfig({}, { port: '0', host: '127.0.0.1', dataDir, logLevel: 'warn' });
  const local = await createCoordinator(config, createLogger(config.logLevel));
  try {
    const issue = async (agent: { id: string; orgId: string }) => (await desiredManifest(local.ctx, agent)).apps.length;
    for (let i = 0; i < Math.min(callers.length, 500); i++) await issue(callers[i]!); // warm-up
    let entries = 0;
    let next = 0;
    const began = performance.now();
    const until = began + seconds * 1000;
    while (performance.now() < until) {
      for (let i = 0; i < 100; i++) entries += await issue(callers[next++ % callers.length]!);
    }
    const elapsed = performance.now() - began;
    return { entriesPerS: entries / (elapsed / 1000), microsEach: (elapsed * 1000) / entries, entries };
  } finally {
    await local.close();
  }
}

function rawSigningRate(bytes: Buffer, seconds: number): { perSecond: number; microsEach: number } {
  const key = privateKeyFromBase64(generateEd25519KeyPair().privateKey);
  for (let i = 0; i < 2000; i++) signBytes(key, bytes); // warm-up
  let count = 0;
  const began = performance.now();
  const until = began + seconds * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < 500; i++) signBytes(key, bytes);
    count += 500;
  }
  const elapsed = performance.now() - began;
  return { perSecond: count / (elapsed / 1000), microsEach: (elapsed * 1000) / count };
}
