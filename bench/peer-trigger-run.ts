/**
 * Benchmark: the trigger hot path against the peer a user would build instead (bench/peer/):
 * Drover's async trigger run, `POST /v1/triggers/:id/run`, beside the peer's `POST /run`
 * (Fastify → BullMQ on Redis). Goals: Drover ≥ 1.25 × the peer's req/s and ≤ 0.8 × its CPU per
 * request (Redis' CPU counted with the peer's), and ≥ 0.5 × a bare Fastify POST.
 *
 *   pnpm bench bench/peer-trigger-run.ts [--connections 50] [--duration 10] [--warmup 3] [--rounds 3] [--aof]
 *
 * Every server runs in this process, one at a time under load; autocannon in a child process; the
 * peer's Redis in its own (its CPU read from /proc). Rounds alternate Drover, the peer and the bare
 * route, so that the machine's drift touches all three alike; the ratios printed are the medians
 * of each round's ratio. Drover's call is bench/trigger-run.ts's (an agent enrolled but not
 * connected: each call commits a pending job); the peer's adds a job to a queue no worker reads.
 * What each side does that the other does not: Drover authenticates the API token, checks the
 * trigger's grant, validates the params against the workflow's schema, numbers the job, and
 * commits it to SQLite (synchronous=NORMAL: durable across a process crash) before it answers;
 * the peer does none of that, and with Redis' defaults a job acknowledged since the last RDB
 * snapshot is lost with Redis. `--aof` gives the peer Redis' durable configuration
 * (`appendonly yes`, `appendfsync everysec`: up to a second lost on a crash).
 */
import assert from 'node:assert/strict';
import { parseArgs } from 'node:util';
import { startBarePostServer } from './lib/bare.js';
import { startBenchCoordinator } from './lib/coordinator.js';
import { runCleanLoad, type LoadResult } from './lib/load.js';
import { integerOption } from './lib/options.js';
import { formatRow, machineNote, median, writeJsonResult } from './lib/report.js';
import { seedAsyncDeployTrigger } from './lib/seed.js';
import { startPeerServer } from './peer/peer-server.js';
import { startRedis } from './peer/redis.js';

const GOAL_RPS = 1.25;
const GOAL_CPU = 0.8;
const GOAL_BARE = 0.5;

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '50' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    aof: { type: 'boolean', default: false },
  },
});
const connections = integerOption('connections', values.connections, 1);
const duration = integerOption('duration', values.duration, 1);
const warmup = integerOption('warmup', values.warmup, 1);
const rounds = integerOption('rounds', values.rounds, 1);

const requestBody = JSON.stringify({ ref: 'v1.42.0', params: { env: 'staging', replicas: 3 } });

const coordinator = await startBenchCoordinator();
const redis = await startRedis({ aof: values.aof });
const peer = await startPeerServer(redis.port);
let bare: Awaited<ReturnType<typeof startBarePostServer>> | undefined;
try {
  const { orgId, ownerId } = coordinator;
  const { triggerId, token } = await seedAsyncDeployTrigger(coordinator.coordinator, orgId, ownerId);
  const route = `/v1/triggers/${triggerId}/run`;
  const droverUrl = `${coordinator.url}${route}`;
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const first = await fetch(droverUrl, { method: 'POST', headers, body: requestBody });
  const answer = (await first.json()) as { jobId: string };
  assert.equal(first.status, 202);
  bare = await startBarePostServer(route, 202, answer, {
    type: 'object',
    properties: { jobId: { type: 'string' }, status: { type: 'string' }, statusUrl: { type: 'string' } },
  });
  const peerAnswer = await fetch(`${peer.url}/run`, { method: 'POST', headers, body: requestBody });
  assert.equal(peerAnswer.status, 202);

  console.log(
    `trigger hot path vs the peer (Fastify → BullMQ, Redis ${values.aof ? 'AOF everysec' : 'defaults'}); ` +
      `${machineNote()}; autocannon -c ${connections} -d ${duration}, ${rounds} rounds after a ${warmup} s warm-up each`,
  );
  const load = { method: 'POST' as const, body: requestBody, headers, connections };
  /** The peer's load, with Redis' CPU added to this process's per request. */
  const peerLoad = async (seconds: number): Promise<LoadResult> => {
    const redisBefore = redis.cpuSeconds();
    const r = await runCleanLoad({ ...load, url: `${peer.url}/run`, duration: seconds });
    const redisMicros = ((redis.cpuSeconds() - redisBefore) * 1e6) / Math.max(1, r.total);
    return { ...r, serverCpuMicrosPerRequest: r.serverCpuMicrosPerRequest + redisMicros };
  };
  const targets = {
    drover: (seconds: number) => runCleanLoad({ ...load, url: droverUrl, duration: seconds }),
    peer: peerLoad,
    bare: (seconds: number) => runCleanLoad({ ...load, url: `${bare!.url}${route}`, duration: seconds }),
  };
  const results: Record<keyof typeof targets, LoadResult[]> = { drover: [], peer: [], bare: [] };
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of Object.entries(targets) as [keyof typeof targets, (s: number) => Promise<LoadResult>][]) {
      await run(warmup);
      const r = await run(duration);
      results[name].push(r);
      console.log(formatRow(`round ${round + 1}: ${name}`, r));
    }
  }
  const pairs = (f: (i: number) => number) => median(results.drover.map((_, i) => f(i)));
  const rps = pairs((i) => results.drover[i]!.requestsPerSecond / results.peer[i]!.requestsPerSecond);
  const cpu = pairs((i) => results.drover[i]!.serverCpuMicrosPerRequest / results.peer[i]!.serverCpuMicrosPerRequest);
  const toBare = pairs((i) => results.drover[i]!.requestsPerSecond / results.bare[i]!.requestsPerSecond);
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log(`Drover / peer req/s: ${rps.toFixed(2)} (goal >= ${GOAL_RPS}: ${verdict(rps >= GOAL_RPS)})`);
  console.log(`Drover / peer CPU per request: ${cpu.toFixed(2)} (goal <= ${GOAL_CPU}: ${verdict(cpu <= GOAL_CPU)})`);
  console.log(
    `Drover / bare Fastify POST req/s: ${toBare.toFixed(2)} (goal >= ${GOAL_BARE}: ${verdict(toBare >= GOAL_BARE)})`,
  );
  writeJsonResult('peer-trigger-run', {
    ratios: { requestsPerSecond: rps, cpuPerRequest: cpu, toBare },
    goals: { requestsPerSecond: GOAL_RPS, cpuPerRequest: GOAL_CPU, toBare: GOAL_BARE },
    rounds: results,
  });
} finally {
  await bare?.close();
  await peer.close();
  await redis.close();
  await coordinator.close();
}
