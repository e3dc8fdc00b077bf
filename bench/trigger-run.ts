/**
 * Benchmark: async trigger runs, `POST /v1/triggers/:id/run`, against a bare Fastify POST route
 * answering a same-sized JSON. Goal: the coordinator route reaches at least 0.4 x the bare
 * route's req/s.
 *
 *   pnpm bench bench/trigger-run.ts [--connections 50] [--duration 10] [--warmup 3] [--rounds 1]
 *                                   [--profile coordinator.cpuprofile] [--without write|counter]
 *
 * Both servers run in this process, one at a time under load; autocannon runs in a child
 * process. The coordinator is real (createCoordinator: SQLite in a temp dir, log level warn,
 * group commit). Its async webhook trigger targets one workflow (with a params schema) of an
 * agent that is enrolled but NOT connected: every call is admitted as a `pending` job that stays
 * pending (the stream has no listener to push it to, so the cost of writing the `job` event to a
 * connected agent's stream is not in these figures). The API token and the workflow have no
 * rate limits (null), so every call is admitted; no Idempotency-Key is sent. Each call does the
 * whole job: bearer parsing and token lookup, trigger grant, trigger and workflow (memory cache
 * checked against the change counter), body validation, params validated against the workflow's
 * paramsSchema with defaults applied, a time-ordered job id, and the job row committed (group
 * commit) before the 202 answer. Results go to docs/performance.md by hand.
 *
 * `--without` is a diagnosis aid, not the product: `write` answers every admission at once
 * without touching the database (no job row, no group commit), so the difference is what the
 * admission's write costs; `counter` makes the change counter's reads (one per memory cache
 * consulted, two per call) free, as if nothing ever changed.
 */
import assert from 'node:assert/strict';
import { startBarePostServer } from './lib/bare.js';
import { startBenchCoordinator } from './lib/coordinator.js';
import { runCleanLoad, type LoadResult } from './lib/load.js';
import { parseLoadOptions } from './lib/options.js';
import { withCpuProfile } from './lib/profile.js';
import { formatRow, machineNote, printRatio } from './lib/report.js';
import { seedAsyncDeployTrigger } from './lib/seed.js';

const GOAL = 0.4;

const values = parseLoadOptions(['write', 'counter']);
const { connections, duration, warmup, rounds } = values;

/** The async answer, as the coordinator's response schema lists it. */
const asyncAnswerSchema = {
  type: 'object',
  required: ['jobId', 'status', 'statusUrl'],
  properties: {
    jobId: { type: 'string' },
    status: { type: 'string' },
    statusUrl: { type: 'string' },
    idempotent: { type: 'boolean' },
  },
} as const;

/** A realistic call: a ref and two params (one enum, one number; a third gets its default). */
const requestBody = JSON.stringify({ ref: 'v1.42.0', params: { env: 'staging', replicas: 3 } });

const coordinator = await startBenchCoordinator();
let bare: Awaited<ReturnType<typeof startBarePostServer>> | undefined;
try {
  const { ctx, db } = coordinator.coordinator;
  const { agentId, triggerId, token } = await seedAsyncDeployTrigger(
    coordinator.coordinator,
    coordinator.orgId,
    coordinator.ownerId,
  );
  const workflow = await ctx.repos.workflows.findActiveByAgentAndName(agentId, 'deploy');
  assert.ok(workflow, 'the workflow is reported');
  assert.deepEqual(workflow.rateLimit, { perMinute: null, perHour: null, perDay: null }, 'no workflow limit');

  const route = `/v1/triggers/${triggerId}/run`;
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const coordinatorUrl = `${coordinator.url}${route}`;

  const first = await fetch(coordinatorUrl, { method: 'POST', headers, body: requestBody });
  const text = await first.text();
  assert.equal(first.status, 202, `POST ${route} answered ${first.status}: ${text}`);
  const answer = JSON.parse(text) as { jobId: string; status: string };
  assert.equal(answer.status, 'pending');
  const job = await ctx.repos.jobs.findById(answer.jobId);
  assert.ok(job, 'the job is stored');
  assert.deepEqual(job.params, { env: 'staging', replicas: 3, dryRun: false }, 'params validated, defaults applied');

  if (values.without === 'write') {
    ctx.repos.triggerRuns.admit = async (request) => ({
      outcome: 'admitted',
      jobId: request.job.id,
      agentId: request.job.agentId,
    });
  } else if (values.without === 'counter') {
    const generation = await ctx.repos.changeCounter.generation();
    ctx.repos.changeCounter.generation = async () => generation;
  }

  bare = await startBarePostServer(route, 202, answer, asyncAnswerSchema);
  const bareUrl = `${bare.url}${route}`;
  const bareResponse = await fetch(bareUrl, { method: 'POST', headers, body: requestBody });
  const bareText = await bareResponse.text();
  assert.equal(bareResponse.status, 202);
  assert.equal(bareText.length, text.length, 'the bare route must answer a same-sized JSON');

  const jobCount = () => (db.prepare('SELECT count(*) AS n FROM jobs').get() as { n: number }).n;
  console.log(
    `async trigger run: POST ${'/v1/triggers/:id/run'}, ${requestBody.length}-byte body, ${text.length}-byte answer (202)`,
  );
  console.log('the trigger targets an enrolled agent that is not connected: every job stays pending');
  if (values.without) console.log(`DIAGNOSIS RUN without ${values.without}: not the product's figures`);
  console.log(
    `machine: ${machineNote()}; autocannon -c ${connections} -d ${duration}, ${rounds} round(s) after a ${warmup} s warm-up`,
  );

  const load = { method: 'POST' as const, body: requestBody, headers, connections };
  const targets = [
    { label: 'bare Fastify POST, same-sized JSON', url: bareUrl, results: [] as LoadResult[] },
    { label: 'coordinator POST /v1/triggers/:id/run', url: coordinatorUrl, results: [] as LoadResult[] },
  ];
  for (const t of targets) await runCleanLoad({ ...load, url: t.url, duration: warmup });
  for (let round = 0; round < rounds; round++) {
    for (const t of targets) {
      const before = jobCount();
      const result = await runCleanLoad({ ...load, url: t.url, duration });
      t.results.push(result);
      console.log(formatRow(t.label, result));
      if (t.url === coordinatorUrl && values.without !== 'write') {
        // Every 202 is a committed job (autocannon may count a few requests still in flight at the end).
        const made = jobCount() - before;
        assert.ok(made >= result.total, `${result.total} answers but only ${made} jobs`);
      }
    }
  }
  printRatio('coordinator / bare', targets[1]!.results, targets[0]!.results, GOAL);
  console.log(`jobs in the table at the end: ${jobCount().toLocaleString('en-US')} (all pending)`);
  if (values.profile) {
    // An extra run under the profiler, which slows the server: its figures are not comparable.
    const profiled = await withCpuProfile(values.profile, () =>
      runCleanLoad({ ...load, url: coordinatorUrl, duration }),
    );
    console.log(formatRow('coordinator, profiled (not comparable)', profiled));
  }
} finally {
  await bare?.close();
  await coordinator.close();
}
