/**
 * Benchmark: GET /v1/agents (token discovery) against a bare Fastify route answering the same
 * JSON. Goal: the coordinator route reaches at least 0.6 x the bare route's req/s.
 *
 *   pnpm bench bench/discovery.ts [--connections 50] [--duration 10] [--warmup 3] [--rounds 1]
 *                                 [--profile coordinator.cpuprofile] [--without cache|audit]
 *
 * Both servers run in this process, one at a time under load; autocannon runs in a child
 * process. The coordinator is real (createCoordinator: SQLite in a temp dir, log level warn,
 * group-committed audit) and serves an organization of 10 agents with 5 workflows each to a
 * token with an agent grant over all of them; every call looks the token up, counts it against
 * the read limit (set very high here), lists the agents and commits an `api_token.discover`
 * audit entry before answering. Results go to docs/performance.md by hand.
 *
 * `--without` is a diagnosis aid, not a configuration: `cache` makes every call miss the memory
 * caches of token lookups and discovery answers, `audit` skips the audit write; the figures then
 * say what each costs.
 */
import assert from 'node:assert/strict';
import { startBareJsonServer } from './lib/bare.js';
import { startBenchCoordinator } from './lib/coordinator.js';
import { runCleanLoad, type LoadResult } from './lib/load.js';
import { parseLoadOptions } from './lib/options.js';
import { withCpuProfile } from './lib/profile.js';
import { formatRow, machineNote, printRatio } from './lib/report.js';
import { seedAgents, seedApiToken } from './lib/seed.js';

const GOAL = 0.6;

const values = parseLoadOptions(['cache', 'audit']);
const { connections, duration, warmup, rounds } = values;

/** The public agent representation, as the coordinator's response schema lists it. */
const agentListSchema = {
  type: 'array',
  items: {
    type: 'object',
    required: ['id', 'name', 'hostname', 'os', 'agentVersion', 'status', 'lastSeenAt', 'enrolledAt'],
    properties: {
      id: { type: 'string' },
      name: { type: 'string' },
      hostname: { type: 'string' },
      os: { type: 'string' },
      agentVersion: { type: 'string' },
      status: { type: 'string' },
      lastSeenAt: { type: ['string', 'null'] },
      enrolledAt: { type: 'string' },
    },
  },
} as const;

const coordinator = await startBenchCoordinator({ API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: '1000000000' });
let bare: Awaited<ReturnType<typeof startBareJsonServer>> | undefined;
try {
  const agents = await seedAgents(coordinator.coordinator, coordinator.orgId, { count: 10, workflowsPerAgent: 5 });
  const token = await seedApiToken(coordinator.coordinator, coordinator.orgId, coordinator.ownerId, [
    { type: 'agent', agentIds: agents.map((a) => a.id) },
  ]);
  const headers = { authorization: `Bearer ${token}` };
  const { ctx } = coordinator.coordinator;
  if (values.without === 'cache') {
    let generation = 0;
    ctx.repos.changeCounter.generation = async () => ++generation; // every lookup sees a new generation
  } else if (values.without === 'audit') {
    ctx.audit.record = async () => {};
  }
  const coordinatorUrl = `${coordinator.url}/v1/agents`;

  const first = await fetch(coordinatorUrl, { headers });
  const text = await first.text();
  assert.equal(first.status, 200, `GET /v1/agents answered ${first.status}: ${text}`);
  const payload = JSON.parse(text) as unknown[];
  assert.equal(payload.length, 10);

  bare = await startBareJsonServer('/v1/agents', payload, agentListSchema);
  const bareUrl = `${bare.url}/v1/agents`;
  const bareText = await (await fetch(bareUrl)).text();
  assert.equal(bareText, text, 'the bare route must answer byte-identical JSON');

  console.log(`token discovery: GET /v1/agents, ${payload.length} agents, ${text.length} bytes of JSON`);
  if (values.without) console.log(`DIAGNOSIS RUN without ${values.without}: not the product's figures`);
  console.log(
    `machine: ${machineNote()}; autocannon -c ${connections} -d ${duration}, ${rounds} round(s) after a ${warmup} s warm-up`,
  );

  const targets = [
    { label: 'bare Fastify, same JSON', url: bareUrl, headers: {}, results: [] as LoadResult[] },
    { label: 'coordinator GET /v1/agents', url: coordinatorUrl, headers, results: [] as LoadResult[] },
  ];
  for (const t of targets) await runCleanLoad({ url: t.url, headers: t.headers, connections, duration: warmup });
  for (let round = 0; round < rounds; round++) {
    for (const t of targets) {
      const result = await runCleanLoad({ url: t.url, headers: t.headers, connections, duration });
      t.results.push(result);
      console.log(formatRow(t.label, result));
    }
  }
  printRatio('coordinator / bare', targets[1]!.results, targets[0]!.results, GOAL);
  if (values.profile) {
    // An extra run under the profiler, which slows the server: its figures are not comparable.
    const profiled = await withCpuProfile(values.profile, () =>
      runCleanLoad({ url: coordinatorUrl, headers, connections, duration }),
    );
    console.log(formatRow('coordinator, profiled (not comparable)', profiled));
  }

  if (values.without !== 'audit') {
    await ctx.audit.flush();
    const audited = await ctx.repos.audit.list(coordinator.orgId, { action: 'api_token.discover', limit: 1 });
    assert.equal(audited.length, 1, 'the discover calls were audited');
  }
} finally {
  await bare?.close();
  await coordinator.close();
}
