/**
 * Benchmark: dispatch latency, from the trigger call to the step's process running on a REAL
 * agent. Goal: p50 < 10 ms on loopback.
 *
 *   pnpm bench bench/dispatch-latency.ts [--runs 300] [--warmup 20] [--rounds 1] [--gap-ms 10] [--shell]
 *                                        [--profile coordinator.cpuprofile] [--profile-agent <dir>] [--tmpfs]
 *                                        [--binary] [--against <program>]
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
 * `--against <program>` compares two builds of the agent back to back: a second agent (e.g. the
 * single executable of the revision before a change, `/tmp/drover-agent-before`, or `node
 * <checkout>/agent/dist/cli/main.js`) with its own trigger on the same workflow, its calls
 * alternating one by one with the first agent's; each round prints both and their ratio.
 *
 * `--tmpfs` is a diagnosis aid, not the product: the agent's state directory goes to /dev/shm,
 * where fsync returns at once, so the difference is what the agent's durable writes (journal,
 * outbox, status.json: temp file, fsync, rename, fsync of the directory) cost on this disk.
 */
import assert from 'node:assert/strict';
import { sleep, type BenchAgent } from './lib/agent.js';
import { formatLatency, summarize, waitForTerminalJob, type LatencySummary } from './lib/latency.js';
import { parseTriggerBenchOptions, printVerdict, startTriggerBench, type TimedCall } from './lib/trigger-bench.js';

const GOAL_P50_MS = 10;

const options = parseTriggerBenchOptions('300', { withShell: true });

const step = options.shell
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

const bench = await startTriggerBench(options, {
  workflowName: 'probe',
  workflow: PROBE_WORKFLOW,
  responseMode: 'async',
});
try {
  const { ctx } = bench.coordinator.coordinator;
  const { route, probe } = bench;

  async function once(timedCall: () => Promise<TimedCall>): Promise<Sample> {
    const { call, answered, res } = await timedCall();
    assert.equal(res.status, 202, `POST ${route} answered ${res.status}: ${res.text}`);
    const jobId = res.body.jobId as string;
    const job = await waitForTerminalJob(bench.coordinator.coordinator, jobId);
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
      const { lines } = await ctx.repos.jobs.listLogs(jobId, { afterSeq: 0, limit: 100, maxBytes: 1 << 20 });
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
    `dispatch latency: async trigger call -> step process running (\`${options.shell ? "sh -c 'date +%s%N'" : 'date +%s%N'}\`) on a real agent daemon`,
  );
  const { all, other } = await bench.measure(once, 'call -> step running', (s) => s.stepRunning - s.call);
  const total = printBreakdown(all, bench.agent);
  if (bench.other) {
    console.log('\nthe agent it ran against:');
    const theirs = printBreakdown(other, bench.other.agent);
    console.log(
      `\nthis / against, all rounds: p50 ${(total.p50 / theirs.p50).toFixed(3)}, p99 ${(total.p99 / theirs.p99).toFixed(3)}`,
    );
  }
  printVerdict(total, GOAL_P50_MS);
} finally {
  await bench.close();
}
bench.printAgentProfiles();

/** Prints where the time of `all` went (probes, and `agent`'s "job started" lines); returns the headline. */
function printBreakdown(all: readonly Sample[], agent: BenchAgent): LatencySummary {
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
  return total;
}
