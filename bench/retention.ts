/**
 * Benchmark: the retention sweep over a year of history. Goals: no deleting batch holds the
 * database more than 50 ms, and async trigger runs answered during the sweep have a p99 at most
 * 1.5 x the p99 without it.
 *
 *   pnpm bench bench/retention.ts [--jobs 1000000] [--lines 20] [--rate 200] [--duration 15]
 *                                 [--vacuum]
 *
 * A real coordinator in this process (createCoordinator, SQLite in a temp dir, log level warn)
 * holds `--jobs` ended jobs of one organization with `--lines` log lines each (and their log
 * usage rows), written with SQL in transactions of 10,000 jobs: ended 10 days ago, 88 % success,
 * 10 % failed, 2 % cancelled, all within the default retention. Then:
 *
 * 1. Async trigger runs (`POST /v1/triggers/:id/run`) at `--rate` calls per second for
 *    `--duration` seconds (autocannon in a child process, 10 connections), without a sweep: the
 *    baseline p99.
 * 2. The owner lowers the organization's retention to 1 day for every class
 *    (`PATCH /v1/orgs/:orgId`), which the next sweep applies to existing data; the sweep is
 *    started and the same load runs again while it deletes. Prints the sweep's time, its batches
 *    and the longest one (what held the database), and the p99 of both loads.
 * 3. The database's size before and after (pages in use and free pages); with `--vacuum`, also
 *    after VACUUM (docs/operations.md, "Retention").
 *
 * The trigger's agent is enrolled but not connected (its jobs stay pending), as in
 * bench/trigger-run.ts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BENCH_OWNER, startBenchCoordinator } from './lib/coordinator.js';
import { runCleanLoad, type LoadResult } from './lib/load.js';
import { integerOption } from './lib/options.js';
import { machineNote } from './lib/report.js';
import { seedAsyncDeployTrigger } from './lib/seed.js';

const GOAL_BATCH_MS = 50;
const GOAL_P99_RATIO = 1.5;
const DAY = 86_400_000;
const CHUNK = 10_000;

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000000' },
    lines: { type: 'string', default: '20' },
    rate: { type: 'string', default: '200' },
    duration: { type: 'string', default: '15' },
    vacuum: { type: 'boolean', default: false },
  },
});
const jobCount = integerOption('jobs', values.jobs, 1000);
const lineCount = integerOption('lines', values.lines, 0);
const rate = integerOption('rate', values.rate, 1);
const duration = integerOption('duration', values.duration, 1);

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

const coordinator = await startBenchCoordinator({ DROVER_RETENTION_SWEEP_SECONDS: '86400' });
try {
  const { ctx, db } = coordinator.coordinator;
  const { orgId, ownerId } = coordinator;
  const { agentId, triggerId, token } = await seedAsyncDeployTrigger(coordinator.coordinator, orgId, ownerId);

  // A year's worth of ended jobs with their log lines, all within the default retention.
  const insertJob = db.prepare(
    `INSERT INTO jobs (id, number, org_id, kind, trigger_id, agent_id, workflow_name, status, params, exit_code,
       error_message, created_at, queued_at, started_at, finished_at, source)
     VALUES (?, ?, ?, 'trigger', ?, ?, 'deploy', ?, '{"ref":"v1.42.0"}', ?, ?, ?, ?, ?, ?, 'webhook')`,
  );
  const insertLine = db.prepare(
    `INSERT INTO job_logs (job_id, seq, at, stream, step, text) VALUES (?, ?, ?, 'stdout', 0, ?)`,
  );
  const insertUsage = db.prepare('INSERT INTO job_log_usage (job_id, lines, bytes) VALUES (?, ?, ?)');
  const ended = Date.now() - 10 * DAY;
  const seeding = performance.now();
  const writeChunk = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const id = randomUUID();
      const at = new Date(ended - (jobCount - i) * 1000).toISOString();
      const status = i % 50 === 0 ? 'cancelled' : i % 10 === 1 ? 'failed' : 'success';
      insertJob.run(
        id,
        i + 1,
        orgId,
        triggerId,
        agentId,
        status,
        status === 'success' ? 0 : 1,
        status === 'failed' ? 'step 1 (deploy) exited with 1' : null,
        at,
        at,
        at,
        at,
      );
      let bytes = 0;
      for (let seq = 1; seq <= lineCount; seq++) {
        const text = `deploy v1.42.0: step ${seq} of ${lineCount} done on edge-00 (${seq * 37} ms)`;
        bytes += Buffer.byteLength(text);
        insertLine.run(id, seq, at, text);
      }
      if (lineCount > 0) insertUsage.run(id, lineCount, bytes);
    }
  });
  for (let from = 0; from < jobCount; from += CHUNK) {
    writeChunk(from, Math.min(jobCount, from + CHUNK));
    // Back-to-back transactions never let the checkpoint thread finish: the WAL would grow to
    // several times the database. Checkpoint here, as a quieter writer lets it happen.
    if ((from / CHUNK) % 10 === 9) db.pragma('wal_checkpoint(RESTART)');
  }
  db.exec('ANALYZE');
  db.pragma('wal_checkpoint(TRUNCATE)');
  const before = await ctx.repos.retention.databaseSize();
  console.log(
    `retention: ${jobCount.toLocaleString('en-US')} ended jobs with ${lineCount} log lines each written in ` +
      `${((performance.now() - seeding) / 1000).toFixed(0)} s; database ${mib(before.bytes)}; ${machineNote()}`,
  );

  const load = (): Promise<LoadResult> =>
    runCleanLoad({
      url: `${coordinator.url}/v1/triggers/${triggerId}/run`,
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ref: 'v1.42.0', params: { env: 'staging' } }),
      connections: 10,
      duration,
      rate,
    });
  const describe = (label: string, r: LoadResult) =>
    `${label}: ${r.total} calls at ${r.requestsPerSecond.toFixed(0)}/s, p50 ${r.p50} ms, p99 ${r.p99} ms`;

  const wal = path.join(ctx.config.dataDir, 'drover.sqlite-wal');
  const walSize = () => (fs.existsSync(wal) ? fs.statSync(wal).size : 0);
  console.log(`write-ahead log before the sweep: ${mib(walSize())}`);
  const quiet = await load();
  console.log(describe('async trigger runs, no sweep  ', quiet));

  // The owner lowers every value to 1 day: the next sweep applies it to the existing jobs.
  const login = await fetch(`${coordinator.url}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(BENCH_OWNER),
  });
  const { token: session } = (await login.json()) as { token: string };
  const patched = await fetch(`${coordinator.url}/v1/orgs/${orgId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${session}`, 'content-type': 'application/json' },
    body: JSON.stringify({ retention: { jobsDays: 1, failedJobsDays: 1, auditDays: 1, occurrencesDays: 1 } }),
  });
  assert.equal(patched.status, 200, `PATCH /orgs/:orgId answered ${patched.status}`);

  // During the sweep: the WAL file's largest size, and how long the event loop was held.
  let walPeak = 0;
  const sampler = setInterval(() => (walPeak = Math.max(walPeak, walSize())), 50);
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  const sweepStarted = performance.now();
  const sweeping = ctx.retention.sweep();
  const during = await load();
  console.log(describe('async trigger runs, sweeping  ', during));
  const report = await sweeping;
  const sweepSeconds = (performance.now() - sweepStarted) / 1000;
  loopDelay.disable();
  clearInterval(sampler);
  assert.ok(report.deleted.jobs >= jobCount - 1, `the sweep deleted ${report.deleted.jobs} jobs`);
  console.log(
    `sweep: ${report.deleted.jobs.toLocaleString('en-US')} jobs and ${report.deleted.logLines.toLocaleString('en-US')} ` +
      `log lines in ${sweepSeconds.toFixed(1)} s (${Math.round(report.deleted.jobs / sweepSeconds).toLocaleString('en-US')} jobs/s), ` +
      `${report.batches.toLocaleString('en-US')} batches, longest ${report.longestBatchMs.toFixed(1)} ms ` +
      `(goal <= ${GOAL_BATCH_MS} ms: ${report.longestBatchMs <= GOAL_BATCH_MS ? 'met' : 'NOT met'})`,
  );
  if (sweepSeconds < duration) {
    console.log(`note: the sweep ended after ${sweepSeconds.toFixed(1)} s of the ${duration} s load`);
  }
  const ratio = during.p99 / Math.max(quiet.p99, 1);
  console.log(
    `p99 during the sweep / without: ${ratio.toFixed(2)} (goal <= ${GOAL_P99_RATIO}: ${ratio <= GOAL_P99_RATIO ? 'met' : 'NOT met'})`,
  );

  const ms = (ns: number) => `${(ns / 1e6).toFixed(1)} ms`;
  console.log(`event loop delay during the sweep: p99 ${ms(loopDelay.percentile(99))}, longest ${ms(loopDelay.max)}`);
  console.log(`write-ahead log: ${mib(walPeak)} at most during the sweep, ${mib(walSize())} at its end`);
  db.pragma('wal_checkpoint(TRUNCATE)');
  const after = await ctx.repos.retention.databaseSize();
  console.log(
    `database: ${mib(before.bytes)} before, ${mib(after.bytes)} after (${mib(after.freeBytes ?? 0)} of it free pages)`,
  );
  if (values.vacuum) {
    const t0 = performance.now();
    db.exec('VACUUM');
    const vacuumed = await ctx.repos.retention.databaseSize();
    const file = fs.statSync(path.join(ctx.config.dataDir, 'drover.sqlite')).size;
    console.log(
      `VACUUM: ${((performance.now() - t0) / 1000).toFixed(1)} s, database ${mib(vacuumed.bytes)} (file ${mib(file)})`,
    );
  }
} finally {
  await coordinator.close();
}
