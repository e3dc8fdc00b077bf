import type { Logger } from 'pino';
import type { WorkflowDefinition } from '@drover/shared';
import type { JobHooks, JobLine, JobResult } from '../exec/run-workflow.js';
import type { StepLauncher } from '../exec/step-launcher.js';
import type { JobFileTransfer } from '../files/job-file-transfer.js';
import type { SendOutcome } from '../outbox/report-sender.js';
import type { Report } from '../outbox/report.js';
import type { LoadedSecrets } from '../workflows/index.js';
import type { JobStop } from './job-stop.js';
import { untilAborted } from '../util/until-aborted.js';
import type { Journal, JournalEntry } from './journal.js';
import type { LogShipper, LogShipperOptions } from './log-shipper.js';

/**
 * What a job's run needs, the same for every job of every kind: the job manager makes it once,
 * and hands it to the runner of the job's kind when the job's turn in the queue comes.
 */
export interface JobRunDeps {
  stateDir: string;
  journal: Journal;
  send(report: Report): Promise<SendOutcome>;
  /** Sends the job's result and records it in the journal. */
  finish(entry: JournalEntry, result: JobResult): void;
  workflow(name: string): WorkflowDefinition | undefined;
  loadSecrets(): Promise<LoadedSecrets>;
  logger: Logger;
  /** The limit of a job whose workflow sets none (null: no limit). */
  defaultJobTimeoutMs: number | null;
  killGraceMs: number;
  logBatch?: LogShipperOptions;
  /** Input and output files of jobs (files/job-file-transfer.ts). */
  transfer?: JobFileTransfer;
  /** Starts the steps' processes (absent: each is spawned directly). */
  launcher?: StepLauncher;
}

/**
 * Runs one accepted job of a kind when its turn in the queue comes, from the coordinator's answer
 * to its accept to its result; resolves once the job has ended. `runTriggerJob` runs trigger
 * jobs; the runner of update jobs is handed to the job manager by whoever puts the agent
 * together (the daemon).
 */
export type RunJob = (
  deps: JobRunDeps,
  entry: JournalEntry,
  accepted: Promise<SendOutcome>,
  stop: JobStop,
) => Promise<void>;

/**
 * The start of an accepted job's run, for every kind of job: waits for the coordinator's answer
 * to the accept, marks the job `running` in the journal and reports the start. Null when the job
 * must not run (the coordinator refused the accept or the start, or shutdown took it back).
 * `meanwhile` runs while the start is reported (its file work must go to the thread pool: what it
 * does on the event loop delays the report's answer); its result comes with the `running` entry.
 */
export async function beginAcceptedJob<T = undefined>(
  deps: Pick<JobRunDeps, 'journal' | 'send' | 'logger'>,
  entry: JournalEntry,
  accepted: Promise<SendOutcome>,
  signal: AbortSignal,
  meanwhile: () => T | Promise<T> = () => undefined as T,
): Promise<{ running: JournalEntry; meanwhile: T } | null> {
  const log = deps.logger.child({ jobId: entry.jobId, workflow: entry.assignment.workflowName });
  const acceptance = await accepted;
  if (acceptance.outcome === 'dropped') {
    deps.journal.update(entry.jobId, { state: 'abandoned', note: `accept refused: ${acceptance.reason}` });
    log.warn(`the coordinator refused the accept (${acceptance.reason}); the job is not run`);
    return null;
  }
  if (signal.aborted) return null; // a cancel or the shutdown took it back; the caller reports it
  // `running` must be on disk before a step starts (so that a crash can never run it twice), not
  // before the start report: a start whose record a power cut lost finds the job unknown at the
  // next delivery, which fails it as lost. So the report goes out while the entry is flushed and
  // `meanwhile` runs; their file work is on the thread pool, so it does not hold the report back.
  // All three are waited for even when one fails: nothing of this job is left running then.
  const [sent, written, done] = await allOrFirstError<[SendOutcome, JournalEntry, T]>([
    deps.send({ kind: 'start', jobId: entry.jobId }),
    deps.journal.updateInBackground(entry.jobId, { state: 'running', startedAt: new Date().toISOString() }),
    (async () => meanwhile())(),
  ]);
  let started = sent;
  let running = written;
  if (started.outcome === 'stored') {
    // The coordinator cannot be reached: it may end this job meanwhile (a cancel of a queued job
    // of an agent it cannot reach ends it at once, as one that never starts), so the job starts
    // once the start, sent from the outbox when it is back, is answered (docs/agent.md). Not
    // `running` while it waits, which may be hours: a crash meanwhile must not fail as interrupted
    // a job that never ran (it is delivered again), and a shutdown ends it as not started.
    deps.journal.update(entry.jobId, { state: 'accepted' });
    log.info('the coordinator cannot be reached: the job starts once it has answered its start');
    const notKept: SendOutcome = { outcome: 'dropped', reason: 'the start could not be kept' };
    // The delivery itself never fails: a rejection here is the abort.
    const answered = await untilAborted(started.delivery ?? Promise.resolve(notKept), signal).catch(() => null);
    if (answered === null) return null; // a cancel or the shutdown took it back; the caller reports it
    started = answered;
    if (started.outcome !== 'dropped') {
      running = deps.journal.update(entry.jobId, { state: 'running', startedAt: new Date().toISOString() });
    }
  }
  if (started.outcome === 'dropped') {
    deps.journal.update(entry.jobId, { state: 'abandoned', note: `start refused: ${started.reason}` });
    log.warn(`the coordinator refused the start (${started.reason}); the job is not run`);
    return null;
  }
  return { running, meanwhile: done };
}

/** The values of all the promises once all have settled, or the first error once all have settled. */
async function allOrFirstError<T extends unknown[]>(promises: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const results = await Promise.allSettled(promises);
  for (const result of results) if (result.status === 'rejected') throw result.reason;
  return results.map((result) => (result as PromiseFulfilledResult<unknown>).value) as T;
}

/** The secrets for a job of `workflow`; a refused secrets file is logged when the workflow lists any. */
export async function loadJobSecrets(
  deps: Pick<JobRunDeps, 'loadSecrets'>,
  workflow: WorkflowDefinition,
  log: Logger,
): Promise<LoadedSecrets> {
  const secrets = await deps.loadSecrets();
  reportSecretsProblem(secrets, workflow, log);
  return secrets;
}

export function reportSecretsProblem(secrets: LoadedSecrets, workflow: WorkflowDefinition, log: Logger): void {
  if (secrets.problem && (workflow.secretsKeys ?? []).length > 0) log.error(secrets.problem);
}

/**
 * The executor's hooks for a job, every kind alike: each step's process group is recorded in the
 * journal (killed at the next start after a crash), each line goes to the shipper and the agent's
 * log; a step stopped by a cancel gets the workflow's `cancelGrace` before SIGKILL.
 */
export function jobHooks(
  journal: Journal,
  jobId: string,
  log: Logger,
  shipper: LogShipper,
  stop: JobStop,
  workflow: WorkflowDefinition,
): JobHooks {
  return {
    signal: stop.signal,
    stopGraceMs: () => stop.graceMs(workflow.cancelGrace),
    onStepSpawn: (_index, pid) => {
      try {
        // Only of use while the machine stays up (no process outlives it): the page cache suffices.
        journal.update(jobId, { processGroup: pid }, { durable: false });
      } catch (error) {
        log.warn({ err: error }, 'cannot record the step process in the journal');
      }
    },
    onLine: (line) => {
      shipper.add(line);
      logLine(log, line);
    },
    outputPressure: shipper,
  };
}

/** A job's line in the agent's own log (already masked), at its level (info by default). */
function logLine(log: Logger, line: JobLine): void {
  const fields = { stream: line.stream, ...(line.step === null ? {} : { step: line.step + 1 }) };
  log[line.level ?? 'info'](fields, line.text);
}
