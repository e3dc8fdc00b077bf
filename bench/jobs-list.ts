/**
 * Benchmark: the dashboard's job list, `GET /v1/orgs/:orgId/jobs`, over 100,000 jobs, and its home
 * page's overview, `GET /v1/orgs/:orgId/overview` (24 hours and a week). Goal: p95 < 50 ms on
 * loopback for every case: the first page and deep pages (by cursor), without a filter and with
 * each filter (status, trigger, agent, source, time range) and a pair of them.
 *
 *   pnpm bench bench/jobs-list.ts [--jobs 100000] [--requests 300] [--limit 50]
 *
 * A real coordinator in this process (createCoordinator, SQLite in a temp dir, log level warn)
 * with 8 agents, 24 triggers and `--jobs` jobs written in one transaction with SQL: 90 days of
 * history, newest last; statuses, sources, triggers and agents spread as a busy organization's
 * (mostly successes, 10 % failures, a few open jobs; mostly API calls and schedules; some
 * triggers and agents far busier than others), and 2 % update jobs, which the list never shows.
 * Each case is asked `--requests` times one at a time over one keep-alive connection with the
 * owner's session (after 20 unmeasured calls); a deep page is asked with the cursor of a row
 * half-way down (and, for the unfiltered list, 99 % of the way down) the case's matching jobs.
 * Prints p50/p95/p99 per case and the query plan of each statement the list uses.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { BENCH_OWNER_EMAIL, startBenchCoordinator } from './lib/coordinator.js';
import { percentile } from './lib/latency.js';
import { integerOption } from './lib/options.js';
import { machineNote } from './lib/report.js';
import { seedAgents, seedTrigger } from './lib/seed.js';

const GOAL_P95_MS = 50;
const DAY = 86_400_000;

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '100000' },
    requests: { type: 'string', default: '300' },
    limit: { type: 'string', default: '50' },
  },
});
const jobCount = integerOption('jobs', values.jobs, 1000);
const requests = integerOption('requests', values.requests, 10);
const limit = integerOption('limit', values.limit, 1);

/** A deterministic generator (mulberry32), so that every run holds the same jobs. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Picks from `[value, weight]` pairs. */
function weighted<T>(next: () => number, choices: readonly (readonly [T, number])[]): T {
  const total = choices.reduce((sum, [, w]) => sum + w, 0);
  let r = next() * total;
  for (const [value, w] of choices) {
    r -= w;
    if (r < 0) return value;
  }
  return choices[choices.length - 1]![0];
}

const STATUSES = [
  ['success', 80],
  ['failed', 10],
  ['cancelled', 3],
  ['timed_out', 2],
  ['rejected', 2],
  ['running', 1],
  ['queued', 1],
  ['pending', 1],
] as const;
const SOURCES = [
  ['webhook', 60],
  ['cron', 30],
  ['manual', 8],
  ['slack', 1],
  ['discord', 1],
] as const;

const coordinator = await startBenchCoordinator();
const agentKeep = new http.Agent({ keepAlive: true, maxSockets: 1 });
try {
  const { orgId, ownerId } = coordinator;
  const { db } = coordinator.coordinator;
  const agents = await seedAgents(coordinator.coordinator, orgId, { count: 8, workflowsPerAgent: 3 });
  const triggers: { id: string; agentId: string; workflowName: string }[] = [];
  for (const [i, agent] of agents.entries()) {
    for (const workflowName of agent.workflowNames) {
      const id = await seedTrigger(coordinator.coordinator, orgId, ownerId, {
        agentId: agent.id,
        workflowName,
        responseMode: i % 4 === 0 ? 'sync' : 'async',
      });
      triggers.push({ id, agentId: agent.id, workflowName });
    }
  }

  // 100,000 jobs in one transaction, oldest first (seq follows created_at, as in production).
  const next = random(17);
  const insert = db.prepare(
    `INSERT INTO jobs (id, number, org_id, kind, source, trigger_id, agent_id, workflow_name, status, ref, params,
       output, exit_code, error_message, user_id, created_at, queued_at, started_at, finished_at)
     VALUES (@id, @number, @orgId, @kind, @source, @triggerId, @agentId, @workflowName, @status, @ref, @params,
       @output, @exitCode, @errorMessage, @userId, @createdAt, @queuedAt, @startedAt, @finishedAt)`,
  );
  const start = Date.now() - 90 * DAY;
  const step = (90 * DAY) / jobCount;
  // Trigger popularity: the first triggers are far busier (a Zipf-like spread).
  const triggerWeights = triggers.map((t, i) => [t, 1 / (i + 1)] as const);
  const seeding = performance.now();
  db.transaction(() => {
    for (let i = 0; i < jobCount; i++) {
      const created = start + i * step + next() * step;
      const at = (ms: number) => new Date(created + ms).toISOString();
      const update = next() < 0.02;
      const trigger = weighted(next, triggerWeights);
      const status = weighted(next, STATUSES);
      const ended = !['running', 'queued', 'pending'].includes(status);
      insert.run({
        id: randomUUID(),
        number: i + 1,
        orgId,
        kind: update ? 'update' : 'trigger',
        source: update ? 'ota' : weighted(next, SOURCES),
        triggerId: update ? null : trigger.id,
        agentId: update ? agents[i % agents.length]!.id : trigger.agentId,
        workflowName: update ? 'install' : trigger.workflowName,
        status,
        ref: 'main',
        params: JSON.stringify({ ref: `v1.${i % 100}` }),
        output: status === 'success' ? JSON.stringify({ url: `https://example.test/builds/${i}` }) : null,
        exitCode: status === 'success' ? 0 : status === 'failed' ? 1 : null,
        errorMessage: status === 'failed' ? 'step 1 (build) exited with 1' : null,
        userId: ownerId,
        createdAt: at(0),
        queuedAt: status === 'pending' ? null : at(40),
        startedAt: ['pending', 'queued', 'rejected'].includes(status) ? null : at(120),
        finishedAt: ended ? at(5_000 + Math.floor(next() * 60_000)) : null,
      });
    }
  })();
  db.exec('ANALYZE');
  console.log(
    `jobs list: ${jobCount.toLocaleString('en-US')} jobs (${agents.length} agents, ${triggers.length} triggers) ` +
      `written in ${((performance.now() - seeding) / 1000).toFixed(1)} s; ${machineNote()}`,
  );

  // The owner's session, as the dashboard holds it.
  const login = await fetch(`${coordinator.url}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: BENCH_OWNER_EMAIL, password: 'bench password' }),
  });
  assert.equal(login.status, 200, await login.clone().text());
  const { token } = (await login.json()) as { token: string };
  const url = new URL(coordinator.url);

  const get = (path: string): Promise<{ status: number; cursor: string | undefined; count: number }> =>
    new Promise((resolve, reject) => {
      const request = http.request(
        { host: url.hostname, port: url.port, path, agent: agentKeep, headers: { authorization: `Bearer ${token}` } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const body = Buffer.concat(chunks).toString();
            if (res.statusCode !== 200) reject(new Error(`${path}: ${res.statusCode} ${body}`));
            const cursor = res.headers['x-next-cursor'];
            resolve({
              status: res.statusCode!,
              cursor: typeof cursor === 'string' ? cursor : undefined,
              count: ((parsed: unknown) => (Array.isArray(parsed) ? parsed.length : 1))(JSON.parse(body)),
            });
          });
        },
      );
      request.on('error', reject);
      request.end();
    });

  /** The seq of the job `fraction` of the way down the case's jobs (newest first): a deep page's cursor. */
  const cursorAt = async (query: Record<string, string>, fraction: number): Promise<string> => {
    const all = await coordinator.coordinator.ctx.repos.jobs.listTriggerJobs(orgId, { ...query, limit: jobCount });
    const job = all[Math.floor(all.length * fraction)];
    assert.ok(job, `no job ${fraction} of the way down ${JSON.stringify(query)}`);
    return String(job.seq);
  };

  const busyTrigger = triggers[0]!;
  const quietTrigger = triggers[triggers.length - 1]!;
  const agent = agents[1]!.id;
  const iso = (ms: number) => new Date(ms).toISOString();
  const now = Date.now();
  const lastDay = { createdAfter: iso(now - DAY) };
  const dayLongAgo = { createdAfter: iso(now - 61 * DAY), createdBefore: iso(now - 60 * DAY) };
  const week = { createdAfter: iso(now - 30 * DAY), createdBefore: iso(now - 23 * DAY) };

  interface Case {
    label: string;
    query: Record<string, string>;
    deep?: number[];
  }
  const cases: Case[] = [
    { label: 'no filter', query: {}, deep: [0.5, 0.99] },
    { label: 'status=failed (10 %)', query: { status: 'failed' } },
    { label: 'status=running (1 %)', query: { status: 'running' } },
    { label: 'source=manual (8 %)', query: { source: 'manual' } },
    { label: 'source=discord (1 %)', query: { source: 'discord' } },
    { label: 'busiest trigger', query: { triggerId: busyTrigger.id } },
    { label: 'quietest trigger', query: { triggerId: quietTrigger.id } },
    { label: 'agent', query: { agentId: agent } },
    { label: 'last day', query: lastDay },
    { label: 'one day, 60 days ago', query: dayLongAgo },
    { label: 'one week, a month ago', query: week },
    { label: 'before an hour ago', query: { createdBefore: iso(now - 3_600_000) } },
    { label: 'status=running + since 89 days ago', query: { status: 'running', createdAfter: iso(now - 89 * DAY) } },
    { label: 'status=failed + agent', query: { status: 'failed', agentId: agent } },
    { label: 'source=cron + one day, 60 days ago', query: { source: 'cron', ...dayLongAgo } },
  ];

  const measure = async (path: string): Promise<{ p50: number; p95: number; p99: number; rows: number }> => {
    let rows = 0;
    for (let i = 0; i < 20; i++) rows = (await get(path)).count;
    const samples: number[] = [];
    for (let i = 0; i < requests; i++) {
      const t0 = performance.now();
      await get(path);
      samples.push(performance.now() - t0);
    }
    samples.sort((a, b) => a - b);
    return { p50: percentile(samples, 50), p95: percentile(samples, 95), p99: percentile(samples, 99), rows };
  };

  const misses: string[] = [];
  const ms = (v: number) => v.toFixed(2).padStart(7);
  console.log(`${requests} requests per case, limit ${limit}; goal p95 < ${GOAL_P95_MS} ms`);
  for (const c of cases) {
    const pages: [string, string | undefined][] = [['first page', undefined]];
    for (const fraction of c.deep ?? [0.5]) {
      pages.push([`cursor ${Math.round(fraction * 100)} % down`, await cursorAt(c.query, fraction)]);
    }
    for (const [page, cursor] of pages) {
      const query = new URLSearchParams({ ...c.query, limit: String(limit), ...(cursor ? { cursor } : {}) });
      const r = await measure(`/v1/orgs/${orgId}/jobs?${query}`);
      const label = `${c.label}, ${page}`;
      const verdict = r.p95 < GOAL_P95_MS ? '' : '   MISSES the goal';
      if (verdict) misses.push(label);
      console.log(
        `${label.padEnd(52)} p50 ${ms(r.p50)} ms  p95 ${ms(r.p95)} ms  p99 ${ms(r.p99)} ms  (${r.rows} rows)${verdict}`,
      );
    }
  }
  // The home page's overview over the same jobs: one aggregate answer, polled every few seconds.
  for (const hours of [24, 168]) {
    const r = await measure(`/v1/orgs/${orgId}/overview?hours=${hours}`);
    const label = `overview, hours=${hours}`;
    const verdict = r.p95 < GOAL_P95_MS ? '' : '   MISSES the goal';
    if (verdict) misses.push(label);
    console.log(`${label.padEnd(52)} p50 ${ms(r.p50)} ms  p95 ${ms(r.p95)} ms  p99 ${ms(r.p99)} ms${verdict}`);
  }
  console.log(
    misses.length ? `BELOW the goal: ${misses.join('; ')}` : `every case meets the goal (p95 < ${GOAL_P95_MS} ms)`,
  );
} finally {
  agentKeep.destroy();
  await coordinator.close();
}
