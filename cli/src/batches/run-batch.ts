import { optionalSessionCaller, type Caller } from '../callers.js';
import { CliExit } from '../errors.js';
import { EXIT } from '../exit-codes.js';
import { waitForStarted } from '../http/outage.js';
import { statusPageUrl } from '../jobs/format-job.js';
import { printJson } from '../output/json.js';
import type { Runtime } from '../runtime.js';
import type { Settings } from '../settings.js';
import { exitCodeOfBatch, type BatchAccepted, type BatchResult } from './batch.js';
import { batchResultTable, batchState, printJobEnds } from './format-batch.js';
import { waitForBatch } from './wait-batch.js';

export interface BatchRunFlags {
  wait?: boolean;
  logs?: boolean;
  json?: boolean;
}

/**
 * `drover run` on a selector trigger (docs/fleets.md, "Batches"): its answer is a batch, one job
 * per agent. 202: the batch and its page; 200 (a sync trigger): the batch's status and a row per
 * agent. With `--wait`, a sync answer is the wait; an async batch is followed with the session
 * (`GET /v1/batches/:id`), as nothing else shows a batch. Exits 0 only when every job succeeded
 * (1 otherwise; 6 while it still runs), 0 without `--wait` once the batch was accepted.
 */
export async function reportBatchRun(
  rt: Runtime,
  settings: Settings,
  caller: Caller,
  answer: { status: number; body: BatchAccepted | BatchResult },
  flags: BatchRunFlags,
  waitTimeoutMs: number | undefined,
): Promise<void> {
  const run = answer.body;
  const page = statusPageUrl(caller.api.origin, run.statusUrl);
  const repeat = run.idempotent ? ' (a repeat)' : '';
  if (answer.status === 200) {
    const result = run as BatchResult;
    if (flags.json) printJson(rt, result);
    else {
      const why = result.timedOut ? ": the trigger's wait ended before its jobs" : '';
      rt.out(`Batch ${result.batchId}${repeat}: ${batchState(result.status, result.jobs)}${why}\n${page}\n`);
      rt.out(batchResultTable(result.jobs));
    }
    if (flags.wait) throw new CliExit(exitCodeOfBatch(result.status));
    return;
  }
  const accepted = run as BatchAccepted;
  if (flags.json && !flags.wait) printJson(rt, accepted);
  if (!flags.json) {
    const jobs = `${accepted.jobCount} job${accepted.jobCount === 1 ? '' : 's'}`;
    rt.out(`Batch ${accepted.batchId}${repeat}: ${accepted.status}, ${jobs}\n${page}\n`);
  }
  if (!flags.wait) return;

  const session = caller.kind === 'session' ? caller : optionalSessionCaller(settings, rt);
  if (session === null) {
    // Nothing follows the batch: a script still gets the answer (its batch id) before the failure.
    if (flags.json) printJson(rt, accepted);
    rt.err(
      `drover: --wait on an async selector trigger needs a session to follow its batch (drover login), or a sync ` +
        `trigger, whose answer waits for every job; batch ${accepted.batchId} keeps running\n`,
    );
    throw new CliExit(EXIT.usage);
  }
  if (flags.logs) {
    rt.err("drover: --logs follows one job's log; a batch's are one per agent: drover job <job-id> --logs\n");
  }
  const end = await waitForStarted(
    waitForBatch(session.api, accepted.batchId, {
      signal: rt.signal,
      timeoutMs: waitTimeoutMs,
      onJobsEnded: printJobEnds(rt),
      onOutage: (message) => rt.err(`drover: ${message}\n`),
    }),
    (ended) => {
      // The batch was never seen: the run's answer is all there is (the error says a timeout).
      if (flags.json) printJson(rt, accepted);
      else if (ended === 'interrupted') {
        rt.out(`Batch ${accepted.batchId}: ${accepted.status}: the wait was interrupted\n`);
      }
    },
  );
  const { batch } = end;
  if (flags.json) printJson(rt, batch);
  else {
    const why =
      end.ended === 'timeout'
        ? ': the wait timed out'
        : end.ended === 'interrupted'
          ? ': the wait was interrupted'
          : '';
    rt.out(`Batch ${batch.id}: ${batchState(batch.status, batch.jobs)}${why}\n${batchResultTable(batch.jobs)}`);
  }
  throw new CliExit(exitCodeOfBatch(batch.status));
}
