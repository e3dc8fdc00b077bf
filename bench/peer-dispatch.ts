/**
 * Benchmark: dispatch latency against the peer a user would build instead (bench/peer/), from the
 * call to the step's process running. Goal: Drover's p50 and p99 ≤ the peer's, in one run.
 *
 *   pnpm bench bench/peer-dispatch.ts [--runs 100] [--warmup 20] [--rounds 3] [--gap-ms 10] [--aof]
 *
 * Drover: bench/dispatch-latency.ts's setup (the real coordinator in this process, the real agent
 * daemon in a child process, a workflow whose one step is `date +%s%N`, an async trigger). The
 * peer: its Fastify `POST /run` in this process, Redis, and a BullMQ worker in a child process
 * spawning the same `date +%s%N`. One call at a time, alternating between the two call by call;
 * the call time and the step's clock are on the same wall clock (bench/lib/latency.ts). The ratios
 * printed are the medians of each round's ratio. What Drover does that the peer does not: the
 * agent's journal (flushed before the step starts, so that a job spawned is never spawned again
 * after a crash), its signed `start` report, the coordinator's durable job row; the peer's worker
 * takes the job from Redis and spawns (with Redis' defaults the job is not durable; `--aof`:
 * everysec).
 */
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from './lib/agent.js';
import { formatLatency, summarize, waitForTerminalJob, WallClock } from './lib/latency.js';
import { median, writeJsonResult } from './lib/report.js';
import { parseTriggerBenchOptions, startTriggerBench } from './lib/trigger-bench.js';
import { startPeerServer } from './peer/peer-server.js';
import { startRedis } from './peer/redis.js';

const aof = process.argv.includes('--aof');
process.argv = process.argv.filter((arg) => arg !== '--aof');
const options = parseTriggerBenchOptions('100');

const PROBE_WORKFLOW = [
  'name: probe',
  'description: prints the system clock in ns as soon as its step runs',
  'version: "1"',
  'timeout: 30s',
  'steps:',
  '  - name: clock',
  '    run: date',
  '    args: ["+%s%N"]',
  '',
].join('\n');

const nsToMs = (text: string) => Number(BigInt(text.trim()) / 1000n) / 1000;

const bench = await startTriggerBench(options, {
  workflowName: 'probe',
  workflow: PROBE_WORKFLOW,
  responseMode: 'async',
});
const redis = await startRedis({ aof });
const peer = await startPeerServer(redis.port);
const here = path.dirname(fileURLToPath(import.meta.url));
const worker = fork(path.join(here, 'peer/peer-worker.ts'), [String(redis.port)], {
  execArgv: ['--import', createRequire(import.meta.url).resolve('tsx')],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
/** The step clocks the worker reports, by job id: a job can end before its call's answer is read. */
const stepClocks = new Map<string, (ns: string) => void>();
const earlyClocks = new Map<string, string>();
worker.on('message', (m: { jobId?: string; ns?: string }) => {
  if (!m.jobId || !m.ns) return;
  const waiting = stepClocks.get(m.jobId);
  if (waiting) waiting(m.ns);
  else earlyClocks.set(m.jobId, m.ns);
});
const stepClockOf = (jobId: string) =>
  new Promise<string>((resolve) => {
    const early = earlyClocks.get(jobId);
    earlyClocks.delete(jobId);
    if (early !== undefined) resolve(early);
    else stepClocks.set(jobId, resolve);
  });
try {
  await new Promise<void>((resolve) => worker.once('message', () => resolve()));
  const { ctx } = bench.coordinator.coordinator;

  async function drover(): Promise<number> {
    const { call, res } = await bench.call();
    assert.equal(res.status, 202, res.text);
    const jobId = res.body.jobId as string;
    const job = await waitForTerminalJob(bench.coordinator.coordinator, jobId);
    assert.equal(job.status, 'success');
    for (const until = Date.now() + 5_000; ;) {
      const { lines } = await ctx.repos.jobs.listLogs(jobId, { afterSeq: 0, limit: 100, maxBytes: 1 << 20 });
      const line = lines.find((l) => l.stream === 'stdout' && /^\d{19}$/.test(l.text.trim()));
      if (line) return nsToMs(line.text) - call;
      if (Date.now() > until) throw new Error(`no clock line in the log of job ${jobId}`);
      await sleep(5);
    }
  }

  const clock = new WallClock();
  async function peerCall(): Promise<number> {
    await sleep(options.gapMs);
    clock.anchor();
    const call = clock.now();
    const res = await fetch(`${peer.url}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ref: 'main' }),
    });
    const { jobId } = (await res.json()) as { jobId: string };
    assert.equal(res.status, 202);
    const ns = await stepClockOf(jobId);
    stepClocks.delete(jobId);
    return nsToMs(ns) - call;
  }

  console.log(
    `dispatch: call -> \`date +%s%N\` running; Drover (real agent) vs the peer (BullMQ worker, Redis ${aof ? 'AOF everysec' : 'defaults'})`,
  );
  for (let i = 0; i < options.warmup; i++) {
    await drover();
    await peerCall();
  }
  const ratios = { p50: [] as number[], p99: [] as number[] };
  for (let round = 0; round < options.rounds; round++) {
    const d: number[] = [];
    const p: number[] = [];
    // One call each in turn, so that both see the same moments of the machine (its load moves
    // within a round).
    for (let i = 0; i < options.runs; i++) {
      d.push(await drover());
      p.push(await peerCall());
    }
    const ds = summarize(d);
    const ps = summarize(p);
    console.log(formatLatency(`round ${round + 1}: Drover`, ds));
    console.log(formatLatency(`round ${round + 1}: peer  `, ps));
    ratios.p50.push(ds.p50 / ps.p50);
    ratios.p99.push(ds.p99 / ps.p99);
  }
  const p50 = median(ratios.p50);
  const p99 = median(ratios.p99);
  console.log(
    `Drover / peer dispatch p50: ${p50.toFixed(2)}, p99: ${p99.toFixed(2)} (goal <= 1: ${p50 <= 1 && p99 <= 1 ? 'met' : 'NOT met'})`,
  );
  writeJsonResult('peer-dispatch', { ratios: { p50, p99 }, goal: 1, perRound: ratios });
} finally {
  worker.disconnect();
  await peer.close();
  await redis.close();
  await bench.close();
}
