/**
 * Benchmark: what the Prometheus metrics cost a trigger run. Async `POST /v1/triggers/:id/run`
 * against two real coordinators in this process, identical but for the metrics: one without any
 * metrics setting (nothing is measured), one with `DROVER_METRICS_TOKEN` set (every request, job,
 * commit and admission observed) and scraped every 5 s during its load. Goal: with metrics,
 * at least 0.98 × the req/s without (a drop of 2 % at most).
 *
 *   pnpm bench bench/metrics-overhead.ts [--connections 50] [--duration 10] [--warmup 3] [--rounds 3]
 *                                        [--profile coordinator.cpuprofile]
 *
 * `--profile` adds a run of the measured coordinator under the CPU profiler and prints the share
 * of its busy CPU spent inside the metrics code (prom-client, coordinator/src/metrics/, the HTTP
 * hook, the job observer): on a noisy machine, a steadier figure than the req/s ratio.
 *
 * The setup is bench/trigger-run.ts's: an agent enrolled but not connected, a workflow with three
 * params, an async webhook trigger and a token without limits; every call is admitted and its
 * job stays pending. autocannon runs in a child process; the two coordinators are loaded one
 * after the other, in an order that alternates from round to round (so a machine that gets
 * busier during the run does not favour one), and the medians of the rounds are compared. The
 * bench checks that the measured coordinator counted every job it made.
 */
import assert from 'node:assert/strict';
import { startBenchCoordinator, type BenchCoordinator } from './lib/coordinator.js';
import { runCleanLoad, type LoadResult } from './lib/load.js';
import { parseLoadOptions } from './lib/options.js';
import { inclusiveShare, readCpuProfile, withCpuProfile } from './lib/profile.js';
import { formatRow, machineNote, printRatio } from './lib/report.js';
import { DEPLOY_WORKFLOW, seedAgent, seedApiToken, seedTrigger } from './lib/seed.js';

const GOAL = 0.98;
const METRICS_TOKEN = 'bench-metrics-token-0123456789';
const SCRAPE_EVERY_MS = 5_000;

const { connections, duration, warmup, rounds, profile } = parseLoadOptions([]);
const requestBody = JSON.stringify({ ref: 'v1.42.0', params: { env: 'staging', replicas: 3 } });

interface Target {
  label: string;
  coordinator: BenchCoordinator;
  url: string;
  headers: Record<string, string>;
  metrics: boolean;
  results: LoadResult[];
}

/** The trigger-run fixture of bench/trigger-run.ts on `coordinator`: the run URL and its headers. */
async function seedRun(coordinator: BenchCoordinator): Promise<{ url: string; headers: Record<string, string> }> {
  const c = coordinator.coordinator;
  const agentId = await seedAgent(c, coordinator.orgId, 0, [DEPLOY_WORKFLOW]);
  const triggerId = await seedTrigger(c, coordinator.orgId, coordinator.ownerId, {
    agentId,
    workflowName: 'deploy',
    responseMode: 'async',
  });
  const token = await seedApiToken(c, coordinator.orgId, coordinator.ownerId, [
    { type: 'trigger', triggerIds: [triggerId] },
  ]);
  const url = `${coordinator.url}/v1/triggers/${triggerId}/run`;
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const first = await fetch(url, { method: 'POST', headers, body: requestBody });
  assert.equal(first.status, 202, `POST ${url} answered ${first.status}: ${await first.text()}`);
  return { url, headers };
}

async function scrapeText(coordinator: BenchCoordinator): Promise<string> {
  const res = await fetch(`${coordinator.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  assert.equal(res.status, 200, `GET /metrics answered ${res.status}`);
  return res.text();
}

/** A load on `t`, scraping it every SCRAPE_EVERY_MS meanwhile when it has metrics. */
async function load(t: Target, seconds: number): Promise<LoadResult> {
  const scrapes: Promise<unknown>[] = [];
  const timer = t.metrics ? setInterval(() => scrapes.push(scrapeText(t.coordinator)), SCRAPE_EVERY_MS) : undefined;
  try {
    return await runCleanLoad({
      method: 'POST',
      body: requestBody,
      headers: t.headers,
      connections,
      url: t.url,
      duration: seconds,
    });
  } finally {
    clearInterval(timer);
    await Promise.all(scrapes);
  }
}

const without = await startBenchCoordinator();
let withMetrics: BenchCoordinator | undefined;
try {
  withMetrics = await startBenchCoordinator({ DROVER_METRICS_TOKEN: METRICS_TOKEN });
  assert.equal(without.coordinator.metrics, null, 'the baseline measures nothing');
  assert.ok(withMetrics.coordinator.metrics, 'the other one measures');
  const targets: Target[] = [
    {
      label: 'trigger run, metrics off',
      coordinator: without,
      ...(await seedRun(without)),
      metrics: false,
      results: [],
    },
    {
      label: 'trigger run, metrics on (+ scrapes)',
      coordinator: withMetrics,
      ...(await seedRun(withMetrics)),
      metrics: true,
      results: [],
    },
  ];
  console.log(
    `async trigger run, POST /v1/triggers/:id/run, ${requestBody.length}-byte body, with and without metrics`,
  );
  console.log(
    `machine: ${machineNote()}; autocannon -c ${connections} -d ${duration}, ${rounds} round(s) after a ${warmup} s warm-up each; a scrape every ${SCRAPE_EVERY_MS / 1000} s with metrics`,
  );
  for (const t of targets) await load(t, warmup);
  for (let round = 0; round < rounds; round++) {
    for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
      const result = await load(t, duration);
      t.results.push(result);
      console.log(`round ${round + 1}: ${formatRow(t.label, result)}`);
    }
  }
  printRatio('metrics on / off', targets[1]!.results, targets[0]!.results, GOAL);

  // Every job the measured coordinator made was counted (none refused, none from another source).
  const jobs = (withMetrics.coordinator.db.prepare('SELECT count(*) AS n FROM jobs').get() as { n: number }).n;
  const text = await scrapeText(withMetrics);
  const created = Number(/^drover_jobs_created_total\{source="webhook"\} (\d+)$/m.exec(text)?.[1]);
  assert.equal(created, jobs, `drover_jobs_created_total says ${created}, the jobs table holds ${jobs}`);
  console.log(`metrics on: drover_jobs_created_total{source="webhook"} ${created} = the jobs stored`);

  if (profile) {
    // An extra run under the profiler, which slows the server: its figures are not comparable.
    const profiled = await withCpuProfile(profile, () => load(targets[1]!, duration));
    console.log(formatRow('metrics on, profiled (not comparable)', profiled));
    // Steadier than req/s on a noisy machine: the CPU spent inside the metrics code itself.
    const share = inclusiveShare(readCpuProfile(profile), (url) =>
      /prom-client|coordinator\/src\/(metrics\/|http\/http-metrics|domain\/(job-)?metrics)/.test(url),
    );
    console.log(
      `metrics code (prom-client, metrics/, the hooks): ${(100 * share.busy).toFixed(2)} % of the busy CPU samples (${(100 * share.all).toFixed(2)} % of all)`,
    );
  }
} finally {
  await withMetrics?.close();
  await without.close();
}
