import fs from 'node:fs';
import type { WorkflowDefinition } from '@drover/shared';
import { jobFiles } from '../exec/job-files.js';
import {
  failedResult,
  firstStepCommand,
  jobTimeoutText,
  prepareJob,
  runWorkflow,
  type JobPlan,
} from '../exec/run-workflow.js';
import type { HeldStep } from '../exec/step-launcher.js';
import type { SendOutcome } from '../outbox/report-sender.js';
import type { LoadedSecrets } from '../workflows/index.js';
import { paramsProblem } from '../workflows/params-check.js';
import { beginAcceptedJob, jobHooks, reportSecretsProblem, type JobRunDeps } from './job-run.js';
import type { JobStop } from './job-stop.js';
import type { JournalEntry } from './journal.js';
import { LogShipper } from './log-shipper.js';

/**
 * Runs one accepted trigger job when its turn in the queue comes: waits for the coordinator's
 * answer to the accept, marks the job `running` in the journal (from then on it is never started
 * again), reports the start, runs its workflow's steps while shipping their log lines, then
 * reports the result.
 * A job the coordinator no longer holds (404/409 to accept or start) is abandoned unrun.
 * While the start is answered, the job's files are created, the secrets read and the first
 * step's process made ready up to its exec (StepLauncher.hold), so that the step starts with one
 * write as soon as the answer comes (an abandoned job's files go with its directory when the
 * journal is pruned; its held process ends unrun).
 */
export async function runTriggerJob(
  deps: JobRunDeps,
  entry: JournalEntry,
  accepted: Promise<SendOutcome>,
  stop: JobStop,
): Promise<void> {
  const { assignment } = entry;
  const log = deps.logger.child({ jobId: entry.jobId, workflow: assignment.workflowName });
  const files = jobFiles(deps.stateDir, entry.jobId);
  const planFor = (workflow: WorkflowDefinition, secrets: LoadedSecrets, prepared: string | null): JobPlan => {
    // The coordinator's `timeoutMs` is the workflow's timeout as this agent reported it.
    const fromWorkflow = assignment.timeoutMs ?? workflow.timeout ?? null;
    const timeoutMs = fromWorkflow ?? deps.defaultJobTimeoutMs;
    return {
      jobId: entry.jobId,
      workflow,
      params: assignment.params,
      ref: assignment.ref,
      debug: assignment.debug,
      timeoutMs,
      ...(timeoutMs === null ? {} : { timeoutText: jobTimeoutText(timeoutMs, fromWorkflow !== null) }),
      files,
      prepared,
      secrets: secrets.secrets,
      secretsProblem: secrets.problem,
      killGraceMs: deps.killGraceMs,
      ...(deps.transfer ? { transfer: deps.transfer } : {}),
      ...(deps.launcher ? { launcher: deps.launcher } : {}),
    };
  };
  /** The first step held, and the workflow definition its command was made from. */
  const first: { held: HeldStep | null; workflow: WorkflowDefinition | null } = { held: null, workflow: null };
  const holdFirstStep = (secrets: LoadedSecrets, prepared: string | null) => {
    const workflow = deps.workflow(assignment.workflowName);
    if (!deps.launcher || !workflow || prepared !== null || stop.signal.aborted) return;
    try {
      const command = firstStepCommand(planFor(workflow, secrets, prepared));
      if (command) {
        first.held = deps.launcher.hold(command);
        first.workflow = workflow;
      }
    } catch (error) {
      log.debug({ err: error }, 'the first step was not made ready ahead; it starts as the others do');
    }
  };
  try {
    const begun = await beginAcceptedJob(deps, entry, accepted, stop.beforeStart, async () => {
      // Both on the thread pool: the secrets are read while the files are written.
      const preparing = prepareJob(files, assignment.params);
      const secrets = await deps.loadSecrets();
      // The step can be held as soon as its directory is there (the spare directory taken by the
      // journal's write has it): it runs only once `begun`, after the files are written.
      if (fs.existsSync(files.workspace)) holdFirstStep(secrets, null);
      const prepared = await preparing;
      if (prepared !== null) {
        first.held?.drop(); // runWorkflow fails the job: no step runs
        first.held = null;
      } else if (!first.held) holdFirstStep(secrets, prepared);
      return { secrets, prepared };
    });
    if (!begun) return;
    const { running } = begun;
    const { secrets, prepared } = begun.meanwhile;

    const workflow = deps.workflow(assignment.workflowName);
    // The params were checked against the file when the job came in; a queued job runs the file as
    // it is now, so they are checked again against it (a stricter pattern keeps a value out).
    const paramsRefused = workflow ? paramsProblem(workflow, assignment.params) : null;
    // The step starts now, before the job's lines and the steps' preparation: its command was made
    // from this very definition, these secrets and no failed preparation, which makes runWorkflow's
    // the same (launch takes it up, and checks).
    if (workflow && workflow === first.workflow && !paramsRefused && first.held?.alive() && !stop.signal.aborted) {
      void first.held.go();
    }
    if (!workflow) {
      const message = `the workflow ${assignment.workflowName} is no longer defined on this agent (its file was removed or became invalid)`;
      log.error(message);
      deps.finish(running, failedResult(message));
      return;
    }
    if (paramsRefused) {
      const message = `${paramsRefused} (the file changed after the job was accepted); no step ran`;
      log.error(message);
      deps.finish(running, failedResult(message));
      return;
    }
    reportSecretsProblem(secrets, workflow, log);

    const shipper = new LogShipper(entry.jobId, (report) => deps.send(report), deps.logBatch);
    log.info(`job started (${workflow.steps.length} step${workflow.steps.length === 1 ? '' : 's'})`);
    const result = await runWorkflow(
      { ...planFor(workflow, secrets, prepared), held: first.held },
      jobHooks(deps.journal, entry.jobId, log, shipper, stop, workflow),
    );
    shipper.flush();
    deps.finish(running, result);
  } finally {
    first.held?.drop(); // not run (refused, cancelled, failed before its first step); nothing once it went
  }
}
