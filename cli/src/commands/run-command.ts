import type { RequestBody } from '@drover/shared/api';
import type { Command } from 'commander';
import { isBatchAnswer, type BatchAccepted, type BatchResult } from '../batches/batch.js';
import { reportBatchRun } from '../batches/run-batch.js';
import { anyCaller, optionalSessionCaller, type Caller } from '../callers.js';
import { parseDuration } from '../duration.js';
import { CliError, CliExit, Interrupted, NoAnswer } from '../errors.js';
import { EXIT, exitCodeOfStatus } from '../exit-codes.js';
import { describeOutcome, formatLogLine, formatOutput, statusPageUrl } from '../jobs/format-job.js';
import { knownJobStatus, type RunAccepted, type RunResult } from '../jobs/job.js';
import { jobAfterWait, waitForJob } from '../jobs/wait.js';
import { waitForStarted } from '../http/outage.js';
import { printJson } from '../output/json.js';
import { buildParams, collect } from '../params.js';
import type { Runtime } from '../runtime.js';
import { loadSettings, type Settings } from '../settings.js';

interface RunFlags {
  param: string[];
  paramsFile?: string;
  ref?: string;
  workflow?: string;
  idempotencyKey?: string;
  debug?: boolean;
  force?: string;
  wait?: boolean;
  waitTimeout?: string;
  logs?: boolean;
  json?: boolean;
}

/** The longest a sync trigger may wait (`responseTimeoutMs` is at most 600 s), and some margin. */
const SYNC_ANSWER_TIMEOUT_MS = 660_000;

export function configureRunCommand(program: Command, rt: Runtime): void {
  program
    .command('run')
    .description(
      "run a trigger: print the job id (a selector trigger's batch) and its status page; with --wait, exit with the outcome",
    )
    .argument('<trigger-id>', 'the trigger to run')
    .option('--param <name=value>', 'a param (repeatable); name:=json for a number, boolean or object', collect, [])
    .option('--params-file <file>', 'params from a JSON object (--param values win)')
    .option('--ref <ref>', 'the ref to run (a commit, a tag)')
    .option('--workflow <name>', 'the workflow, for a trigger of any workflow of an agent')
    .option('--idempotency-key <key>', 'run once per key: a repeat answers the first job')
    .option('--debug', 'run in debug mode (when the trigger allows it)')
    .option('--force <reason>', "bypass the workflow's rate limit (owners only), giving the reason")
    .option(
      '--wait',
      "wait for the job's end (a batch's: every job's) and exit with its outcome (an async trigger needs a session)",
    )
    .option('--wait-timeout <duration>', 'stop waiting after this long (exit 6), e.g. 10m')
    .option('--logs', "with --wait on an async trigger: print the job's log lines as they come (stderr)")
    .option('--json', "print the API's answer as JSON (with --wait on an async trigger: the job's, or the batch's)")
    .addHelpText(
      'after',
      '\nExit codes: 0 success (or accepted, without --wait), 1 failed, 2 usage or API error, 3 rejected,\n' +
        '4 timed out, 5 cancelled, 6 the wait ended while the job still runs (Ctrl-C during --wait included),\n' +
        '130 interrupted outside a wait, 141 the reader of the output went away (`| head`).\n' +
        'A batch (a selector trigger) waited for: 0 when every job succeeded, 1 otherwise, 6 while it still runs.\n',
    )
    .action(async (triggerId: string, flags: RunFlags, command: Command) => {
      const settings = loadSettings(command.optsWithGlobals(), rt);
      const waitTimeoutMs =
        flags.waitTimeout === undefined ? undefined : parseDuration(flags.waitTimeout, '--wait-timeout');
      // The wait's deadline covers the run's own answer (a sync trigger's) and any following.
      const deadline = waitTimeoutMs === undefined ? Infinity : Date.now() + waitTimeoutMs;
      if (!flags.wait && (flags.waitTimeout !== undefined || flags.logs)) {
        throw new CliError(`${flags.logs ? '--logs' : '--wait-timeout'} needs --wait`);
      }
      const body = {
        ...(flags.ref === undefined ? {} : { ref: flags.ref }),
        ...(flags.workflow === undefined ? {} : { workflowName: flags.workflow }),
        ...(flags.debug ? { debug: true } : {}),
        ...(flags.force === undefined ? {} : { force: true, forceReason: flags.force }),
        params: buildParams(rt.cwd, flags.param, flags.paramsFile),
      } satisfies RequestBody<'runTrigger'>;
      const caller = anyCaller(settings, rt);
      const answer = await runTrigger(caller, triggerId, body, flags, waitTimeoutMs);
      checkRunAnswer(answer.body);
      const left = () => (deadline === Infinity ? undefined : Math.max(0, deadline - Date.now()));
      // A selector trigger answers with its batch: one job per agent it selects.
      if (isBatchAnswer(answer.body)) {
        return reportBatchRun(rt, settings, caller, { ...answer, body: answer.body }, flags, left());
      }
      const run = answer.body;
      // 200: the trigger is sync, and this is the job's result; 202: the job was accepted.
      const result = answer.status === 200 ? (run as RunResult) : null;
      const page = statusPageUrl(caller.api.origin, run.statusUrl);

      const waiting = flags.wait === true && run.status !== 'rejected';
      if (waiting && result) {
        if (flags.json) printJson(rt, result);
        else printSyncOutcome(rt, result, page);
        throw new CliExit(result.timedOut ? EXIT.stillRunning : exitCodeOfStatus(result.status));
      }
      if (flags.json && !waiting) printJson(rt, run);
      if (!flags.json) rt.out(`Job ${run.jobId} ${run.idempotent ? '(a repeat) ' : ''}${run.status}\n${page}\n`);
      if (run.status === 'rejected') {
        rt.err(`drover: the job was rejected${result?.errorMessage ? `: ${result.errorMessage}` : ''}\n`);
        throw new CliExit(EXIT.rejected);
      }
      if (!waiting) return;
      await followAsyncJob(rt, settings, caller, run, flags, left());
    });
}

type RunAnswer = RunAccepted | RunResult | BatchAccepted | BatchResult;

/**
 * Runs the trigger. A sync trigger's answer is its wait: it waits at most `--wait-timeout`; when
 * that passes first, exit 6 saying the job may still run and how to get it back. A connection lost
 * once the run was sent (a coordinator or a proxy restarted during a sync trigger's wait) says the
 * same, rather than that the coordinator could not be reached: exit 6 with `--wait`, else 2.
 */
async function runTrigger(
  caller: Caller,
  triggerId: string,
  body: object,
  flags: RunFlags,
  waitTimeoutMs: number | undefined,
) {
  const idempotencyKey = flags.idempotencyKey;
  const headers = idempotencyKey === undefined ? undefined : { 'idempotency-key': idempotencyKey };
  const id = encodeURIComponent(triggerId);
  const answerTimeoutMs = Math.min(SYNC_ANSWER_TIMEOUT_MS, waitTimeoutMs ?? Infinity);
  const options = { body, headers, answerTimeoutMs };
  // A session runs it by hand (the same body and answers, in the user's organization).
  const path = caller.kind === 'token' ? `/triggers/${id}/run` : `/orgs/${await caller.orgId()}/triggers/${id}/run`;
  try {
    return await caller.api.call<RunAnswer>('POST', path, options);
  } catch (error) {
    const getBack =
      idempotencyKey === undefined
        ? 'find it with `drover jobs` (a session), or next time pass --idempotency-key to get it back by running again'
        : `run again with --idempotency-key ${idempotencyKey} to get its answer, or find it with \`drover jobs\``;
    if (error instanceof Interrupted) {
      // Ctrl-C (or a CI's SIGTERM) while a sync trigger's run waited for its answer: sent, it started a job.
      throw new CliError(
        `interrupted while the run waited for its answer: the job may have started and still run; ${getBack}`,
        EXIT.interrupted,
      );
    }
    if (!(error instanceof NoAnswer) || !(error.afterSending || (waitTimeoutMs !== undefined && error.timedOut)))
      throw error;
    if (waitTimeoutMs !== undefined && error.timedOut) {
      throw new CliError(
        `no answer from the run within --wait-timeout ${flags.waitTimeout}: the job may still run; ${getBack}`,
        EXIT.stillRunning,
      );
    }
    const lost = error.timedOut ? 'no answer in time' : error.code;
    throw new CliError(
      `the coordinator at ${caller.api.origin} did not answer the run it was sent (${lost}): the job may have ` +
        `started and still run; ${getBack}`,
      flags.wait ? EXIT.stillRunning : EXIT.usage,
    );
  }
}

/** Batch statuses this command line knows (`Batch.status`). */
const BATCH_STATUSES: readonly string[] = [
  'pending',
  'running',
  'success',
  'failed',
  'partial',
  'cancelled',
] satisfies readonly BatchResult['status'][];

/**
 * The run's answer checked before anything is said of it: a job's id and a status this command
 * line knows, or a batch's; else an error (exit 2), never a report of `Job undefined`.
 */
function checkRunAnswer(body: unknown): asserts body is RunAnswer {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new CliError("the coordinator's answer to the run is not a job or a batch: check --url");
  }
  const fields = body as Record<string, unknown>;
  if ('batchId' in fields) {
    if (typeof fields.batchId !== 'string' || fields.batchId === '') {
      throw new CliError("the coordinator's answer to the run names no batch: check --url");
    }
    if (typeof fields.status !== 'string' || !BATCH_STATUSES.includes(fields.status)) {
      throw new CliError(
        `the coordinator reported status ${JSON.stringify(fields.status ?? null)} for batch ${fields.batchId}, ` +
          'which this drover does not know: upgrade the CLI',
      );
    }
    if ('jobs' in fields && !Array.isArray(fields.jobs)) {
      throw new CliError(`the coordinator's answer for batch ${fields.batchId} has no list of jobs: check --url`);
    }
    return;
  }
  if (typeof fields.jobId !== 'string' || fields.jobId === '') {
    throw new CliError("the coordinator's answer to the run names no job: check --url");
  }
  knownJobStatus(fields.status, `job ${fields.jobId}`);
}

function printSyncOutcome(rt: Runtime, run: RunResult, page: string): void {
  rt.out(`Job ${run.jobId} ${run.idempotent ? '(a repeat) ' : ''}`);
  if (run.timedOut) {
    rt.out(`is still ${run.status}: the trigger's wait ended before the job\n${page}\n`);
    return;
  }
  const outcome = describeOutcome({
    status: run.status,
    exitCode: run.exitCode ?? null,
    errorMessage: run.errorMessage ?? null,
    startedAt: null,
    finishedAt: null,
  });
  rt.out(`${outcome}\n${page}\n${formatOutput(run.output)}`);
}

/** `--wait` on an async trigger: follows the job with the session to its end. */
async function followAsyncJob(
  rt: Runtime,
  settings: Settings,
  caller: Caller,
  run: RunAccepted | RunResult,
  flags: RunFlags,
  timeoutMs: number | undefined,
): Promise<void> {
  const session = caller.kind === 'session' ? caller : optionalSessionCaller(settings, rt);
  if (session === null) {
    // Nothing follows the job: a script still gets the answer (its job id) before the failure.
    if (flags.json) printJson(rt, run);
    rt.err(
      `drover: --wait on an async trigger needs a session to follow the job (drover login); job ${run.jobId} keeps running\n`,
    );
    throw new CliExit(EXIT.usage);
  }
  const end = await waitForStarted(
    waitForJob(session.api, run.jobId, {
      signal: rt.signal,
      timeoutMs,
      onLogs: flags.logs ? (lines) => lines.forEach((line) => rt.err(formatLogLine(line))) : undefined,
      onOutage: (message) => rt.err(`drover: ${message}\n`),
    }),
    (ended) => {
      // The job was never seen: the run's answer is all there is (the error says a timeout).
      if (flags.json) printJson(rt, run);
      else if (ended === 'interrupted') rt.out(`Job ${run.jobId} is still ${run.status}: the wait was interrupted\n`);
    },
  );
  const job = end.job;
  if (flags.json) {
    // The job as the API answers it, without its log lines (`drover job <id> --logs --json` has them).
    printJson(rt, await jobAfterWait(session.api, end, { logsAfter: Number.MAX_SAFE_INTEGER, logsLimit: 1 }));
  } else if (end.ended === 'finished') {
    rt.out(`Job ${job.id} ${describeOutcome(job)}\n${formatOutput(job.output)}`);
  } else {
    const why = end.ended === 'timeout' ? 'the wait timed out' : 'the wait was interrupted';
    rt.out(`Job ${job.id} is still ${job.status}: ${why}\n`);
  }
  throw new CliExit(end.ended === 'finished' ? exitCodeOfStatus(job.status) : EXIT.stillRunning);
}
