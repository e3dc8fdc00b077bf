/**
 * Benchmark: the whole HTTP round trip of a sync trigger run whose workflow's only step is
 * `true`, on a REAL agent. Goal: p50 < 50 ms.
 *
 *   pnpm bench bench/sync-roundtrip.ts [--runs 200] [--warmup 20] [--rounds 1] [--gap-ms 10]
 *                                      [--profile coordinator.cpuprofile] [--profile-agent <dir>] [--tmpfs]
 *
 * The coordinator is real and in this process (createCoordinator, log level warn); the agent is
 * the real daemon, `drover-agent run`, in a child process (bench/lib/agent.ts), connected over
 * loopback. The trigger is `responseMode: sync`: the coordinator admits the job, pushes it on the
 * agent's stream and answers 200 once the agent reported the result (an in-process event, no
 * polling). One call at a time over a keep-alive connection, each after the previous answer and
 * `--gap-ms`; the figure is the time from writing the request to having read the whole answer,
 * taken in this process.
 *
 * Breakdown (probes in this process, bench/lib/latency.ts): when the agent's `start` report, its
 * first log batch and its `finish` report reached the job repository, and when the finish was
 * committed (the sync answer is sent right after).
 *
 * `--tmpfs` is a diagnosis aid, not the product: the agent's state directory goes to /dev/shm,
 * where fsync returns at once, so the difference is what the agent's durable writes (journal,
 * outbox, status.json: temp file, fsync, rename, fsync of the directory) cost on this disk.
 */
import assert from 'node:assert/strict';
import { formatLatency, summarize } from './lib/latency.js';
import { parseTriggerBenchOptions, printVerdict, startTriggerBench, type TimedCall } from './lib/trigger-bench.js';

const GOAL_P50_MS = 50;

const options = parseTriggerBenchOptions('200');

const NOOP_WORKFLOW = [
  'name: noop',
  'description: does nothing, successfully',
  'version: "1"',
  'timeout: 30s',
  'steps:',
  '  - name: nothing',
  '    run: "true"',
  '',
].join('\n');

interface Sample {
  call: number;
  answered: number;
  startReceived: number;
  logsReceived: number | undefined;
  logsCommitted: number | undefined;
  finishReceived: number;
  finishCommitted: number;
}

const bench = await startTriggerBench(options, { workflowName: 'noop', workflow: NOOP_WORKFLOW, responseMode: 'sync' });
try {
  const { route, probe } = bench;

  async function once(timedCall: () => Promise<TimedCall>): Promise<Sample> {
    const { call, answered, res } = await timedCall();
    assert.equal(res.status, 200, `POST ${route} answered ${res.status}: ${res.text}`);
    assert.equal(res.body.status, 'success', `sync answer: ${res.text}`);
    assert.equal(res.body.exitCode, 0);
    assert.equal(res.body.timedOut, undefined);
    const m = probe.moments.get(res.body.jobId as string);
    probe.moments.delete(res.body.jobId as string);
    assert.ok(m?.startReceived && m.finishReceived && m.finishCommitted, `moments: ${JSON.stringify(m)}`);
    return {
      call,
      answered,
      startReceived: m.startReceived,
      logsReceived: m.logsReceived,
      logsCommitted: m.logsCommitted,
      finishReceived: m.finishReceived,
      finishCommitted: m.finishCommitted,
    };
  }

  console.log('sync round trip: POST /v1/triggers/:id/run (sync) of a workflow whose only step is `true`, real agent');
  const { all } = await bench.measure(once, 'whole round trip', (s) => s.answered - s.call);

  const total = summarize(all.map((s) => s.answered - s.call));
  console.log('\nall rounds (ms from the call):');
  console.log(
    formatLatency("agent's start report reaches the repository", summarize(all.map((s) => s.startReceived - s.call))),
  );
  console.log(
    formatLatency("agent's finish report reaches the repository", summarize(all.map((s) => s.finishReceived - s.call))),
  );
  console.log(formatLatency('finish committed', summarize(all.map((s) => s.finishCommitted - s.call))));
  console.log(formatLatency('answer read by the caller (headline)', total));
  console.log('segments:');
  console.log(
    formatLatency(
      '  start received -> finish received (agent runs `true`)',
      summarize(all.map((s) => s.finishReceived - s.startReceived)),
    ),
  );
  const withLogs = all.filter((s) => s.logsReceived !== undefined && s.logsReceived < s.finishReceived);
  if (withLogs.length > 0) {
    console.log(
      `  ${withLogs.length} of ${all.length} jobs sent a log batch (the step's start/end lines) before the finish:`,
    );
    console.log(
      formatLatency(
        '    start received -> log batch received',
        summarize(withLogs.map((s) => s.logsReceived! - s.startReceived)),
      ),
    );
    console.log(
      formatLatency(
        '    log batch committed -> finish received',
        summarize(withLogs.map((s) => s.finishReceived - s.logsCommitted!)),
      ),
    );
  }
  console.log(
    formatLatency('  finish committed -> answer read', summarize(all.map((s) => s.answered - s.finishCommitted))),
  );
  printVerdict(total, GOAL_P50_MS);
} finally {
  await bench.close();
}
bench.printAgentProfiles();
