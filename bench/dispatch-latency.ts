/**
 * Benchmark: dispatch latency, from the trigger call to the step's process running on a REAL
 * agent. Goal: p50 < 10 ms on loopback.
 *
 *   pnpm bench bench/dispatch-latency.ts [--runs 300] [--warmup 20] [--rounds 1] [--gap-ms 10] [--shell]
 *                                        [--profile coordinator.cpuprofile] [--profile-agent <dir>] [--tmpfs]
 *
 * The coordinator is real and in this process (createCoordinator, log level warn). The agent is
 * the real daemon, `drover-agent run`, in a child process (enrolled through `drover-agent
 * enroll`, TypeScript through tsx), connected over loopback with its stream. Its one workflow's
 * only step is `date +%s%N` (a program run directly; `--shell` runs it through `/bin/sh -c`
 * instead): the step prints the system clock (CLOCK_REALTIME, ns) as soon as it runs, and the
 * line reaches the coordinator as a job log line.
 *
 * One call at a time (async trigger, 202), each after the previous job ended and `--gap-ms`
 * passed. The call time is taken in this process just before the request is written, with a
 * wall clock re-anchored to `Date.now()` before each call (bench/lib/latency.ts: µs resolution,
 * the same CLOCK_REALTIME the step reads), so `step running - call` is comparable across the two
 * processes. What is measured therefore ends when `date` has been exec'd, linked, and has read
 * the clock (~0.5 ms of process start that any step pays), not when the agent calls spawn.
 *
 * The breakdown comes from probes in this process (bench/lib/latency.ts `probeJobMoments`):
 * when the admission committed and the `job` event was written to the agent's stream, when the
 * HTTP answer reached the caller, when the agent's `start` report reached the job repository
 * (the agent skips `accept` when its queue is idle: `start` moves pending → running), and when
 * the agent logged "job started" (agent log, 1 ms resolution).
 *
 * `--tmpfs` is a diagnosis aid, not the product: the agent's state directory goes to /dev/shm,
 * where fsync returns at once, so the difference is what the agent's durable writes (journal,
 * outbox, status.json: temp file, fsync, rename, fsync of the directory) cost on this disk.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startBenchAgent, sleep, type BenchAgent } from './lib/agent.js';
import { startBenchCoordinator } from './lib/coordinator.js';
import { formatLatency, JsonClient, probeJobMoments, summarize, waitForTerminalJob, WallClock } from './lib/latency.js';
import { summarizeProfile, withCpuProfile } from './lib/profile.js';
import { machineNote } from './lib/report.js';
import { seedApiToken, seedTrigger } from './lib/seed.js';

const GOAL_P50_MS = 10;

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '300' },
    warmup: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '1' },
    'gap-ms': { type: 'string', default: '10' },
    shell: { type: 'boolean', default: false },
    profile: { type: 'string' },
    'profile-agent': { type: 'string' },
    tmpfs: { type: 'boolean', default: false },
  },
});

function integer(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`--${name}: expected an integer >= ${min}, got \`${raw}\``);
  return n;
}
const runs = integer('runs', values.runs, 1);
const warmup = integer('warmup', values.warmup, 0);
const rounds = integer('rounds', values.rounds, 1);
const gapMs = integer('gap-ms', values['gap-ms'], 0);
const profileAgentDir = values['profile-agent'] && path.resolve(values['profile-agent']);

const step = values.shell
  ? ['  - name: clock', '    run: date +%s%N', '    shell: true']
  : ['  - name: clock', '    run: date', '    args: ["+%s%N"]'];
const PROBE_WORKFLOW = [
  'name: probe',
  'description: prints the system clock in ns as soon as its step runs',
  'version: "1"',
  'timeout: 30s',
  'steps:',
  ...step,
  '',
].join('\n');

interface Sample {
  jobId: string;
  call: number;
  answered: number;
  pushed: number;
  startReceived: number;
  startCommitted: number;
  stepRunning: number;
}

const coordinator = await startBenchCoordinator();
let agent: BenchAgent | undefined;
const client = new JsonClient(coordinator.url);
try {
  if (profileAgentDir) fs.mkdirSync(profileAgentDir, { recursive: true });
  agent = await startBenchAgent(coordinator, {
    workflows: { probe: PROBE_WORKFLOW },
    ...(profileAgentDir ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profileAgentDir}`] } : {}),
    ...(values.tmpfs ? { parentDir: '/dev/shm' } : {}),
  });
  if (values.tmpfs)
    console.log(
      "DIAGNOSIS RUN: the agent's state directory is on tmpfs (fsync costs nothing): not the product's figures",
    );
  const { ctx } = coordinator.coordinator;
  const triggerId = await seedTrigger(coordinator.coordinator, coordinator.orgId, coordinator.ownerId, {
    agentId: agent.agentId,
    workflowName: 'probe',
    responseMode: 'async',
  });
  const token = await seedApiToken(coordinator.coordinator, coordinator.orgId, coordinator.ownerId, [
    { type: 'trigger', triggerIds: [triggerId] },
  ]);
  const route = `/v1/triggers/${triggerId}/run`;
  const headers = { authorization: `Bearer ${token}` };
  const clock = new WallClock();
  const probe = probeJobMoments(coordinator.coordinator, clock);

  async function once(): Promise<Sample> {
    await sleep(gapMs);
    clock.anchor();
    const call = clock.now();
    const res = await client.post(route, { ref: 'main' }, headers);
    const answered = clock.now();
    assert.equal(res.status, 202, `POST ${route} answered ${res.status}: ${res.text}`);
    const jobId = res.body.jobId as string;
    const job = await waitForTerminalJob(coordinator.coordinator, jobId);
    assert.equal(job.status, 'success', `job ${jobId} ended ${job.status}: ${job.errorMessage}`);
    const stepRunning = await stepClock(jobId);
    const m = probe.moments.get(jobId);
    probe.moments.delete(jobId);
    assert.ok(m?.created && m.startReceived && m.startCommitted, `moments of ${jobId}: ${JSON.stringify(m)}`);
    assert.equal(m.acceptReceived, undefined, 'an idle agent starts the job without an accept');
    return {
      jobId,
      call,
      answered,
      pushed: m.created,
      startReceived: m.startReceived,
      startCommitted: m.startCommitted,
      stepRunning,
    };
  }

  /** The step's clock reading, from its stdout line (log lines are shipped in batches: wait for it). */
  async function stepClock(jobId: string): Promise<number> {
    const until = Date.now() + 5_000;
    for (;;) {
      const lines = await ctx.repos.jobs.listLogs(jobId, 0, 100);
      const line = lines.find((l) => l.stream === 'stdout' && /^\d{19}$/.test(l.text.trim()));
      if (line) {
        const ns = BigInt(line.text.trim());
        return Number(ns / 1000n) / 1000; // ms with µs resolution (exact in a double)
      }
      if (Date.now() > until) throw new Error(`no clock line in the log of job ${jobId}: ${JSON.stringify(lines)}`);
      await sleep(5);
    }
  }

  console.log(
    `dispatch latency: async trigger call -> step process running (\`${values.shell ? "sh -c 'date +%s%N'" : 'date +%s%N'}\`) on a real agent daemon`,
  );
  console.log(
    `machine: ${machineNote()}; ${runs} sequential calls per round, ${rounds} round(s), ${warmup} warm-up calls, ${gapMs} ms between calls`,
  );
  for (let i = 0; i < warmup; i++) await once();

  const all: Sample[] = [];
  const measure = async () => {
    for (let round = 0; round < rounds; round++) {
      const samples: Sample[] = [];
      for (let i = 0; i < runs; i++) samples.push(await once());
      all.push(...samples);
      console.log(
        formatLatency(
          `round ${round + 1}: call -> step running`,
          summarize(samples.map((s) => s.stepRunning - s.call)),
        ),
      );
    }
  };
  await withCpuProfile(values.profile, measure);

  const agentStarted = new Map<string, number>();
  for (const r of agent.logRecords()) {
    if (typeof r.jobId === 'string' && typeof r.msg === 'string' && r.msg.startsWith('job started')) {
      agentStarted.set(r.jobId, typeof r.time === 'string' ? Date.parse(r.time) : (r.time as number));
    }
  }
  const total = summarize(all.map((s) => s.stepRunning - s.call));
  console.log('\nall rounds (ms from the call unless said otherwise):');
  console.log(
    formatLatency('job committed, event written to the stream', summarize(all.map((s) => s.pushed - s.call))),
  );
  console.log(formatLatency('HTTP 202 received by the caller', summarize(all.map((s) => s.answered - s.call))));
  console.log(
    formatLatency("agent's start report reaches the repository", summarize(all.map((s) => s.startReceived - s.call))),
  );
  console.log(formatLatency('start committed', summarize(all.map((s) => s.startCommitted - s.call))));
  console.log(formatLatency('step process running (headline)', total));
  console.log('segments:');
  console.log(
    formatLatency('  stream event -> start report received', summarize(all.map((s) => s.startReceived - s.pushed))),
  );
  console.log(
    formatLatency(
      '  start report received -> committed',
      summarize(all.map((s) => s.startCommitted - s.startReceived)),
    ),
  );
  const logged = all.filter((s) => agentStarted.has(s.jobId));
  if (logged.length > 0) {
    console.log(
      formatLatency(
        '  start committed -> agent logs "job started" (±1 ms)',
        summarize(logged.map((s) => agentStarted.get(s.jobId)! - s.startCommitted)),
      ),
    );
    console.log(
      formatLatency(
        '  agent logs "job started" -> step running (±1 ms)',
        summarize(logged.map((s) => s.stepRunning - agentStarted.get(s.jobId)!)),
      ),
    );
  }
  console.log(
    formatLatency('  start committed -> step running', summarize(all.map((s) => s.stepRunning - s.startCommitted))),
  );
  const verdict = total.p50 < GOAL_P50_MS ? 'meets' : 'MISSES';
  console.log(
    `\np50 ${total.p50.toFixed(2)} ms (goal < ${GOAL_P50_MS} ms: ${verdict} the goal); p99 ${total.p99.toFixed(2)} ms`,
  );
  probe.detach();
} finally {
  client.close();
  await agent?.close();
  await coordinator.close();
}

if (profileAgentDir) {
  const files = fs.readdirSync(profileAgentDir).filter((f) => f.endsWith('.cpuprofile'));
  for (const file of files) {
    const full = path.join(profileAgentDir, file);
    const profile = JSON.parse(fs.readFileSync(full, 'utf8')) as Parameters<typeof summarizeProfile>[0];
    console.log(`agent CPU profile ${full} (whole life of the daemon, start-up included):`);
    console.log(summarizeProfile(profile));
  }
}
