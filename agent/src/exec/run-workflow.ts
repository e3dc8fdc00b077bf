import path from 'node:path';
import type { FinishJobRequest, LogStream, WorkflowDefinition, WorkflowStep } from '@drover/shared';
import type { JobFileTransfer } from '../files/job-file-transfer.js';
import { hasFileOutputs, hasInputFiles, jobTimeSignal, paramsWithoutUrls } from '../files/job-phases.js';
import { describeFileError } from '../state/files.js';
import { formatDuration } from './durations.js';
import { prepareJobFiles, writeParamsFile, type JobFiles } from './job-files.js';
import { MAX_OUTPUT_BYTES, parseOutputFile, readOutputFile } from './output-file.js';
import { runStep, stepCommand, type OutputPressure, type StepOutcome } from './run-step.js';
import { createMasker, maskDeep, type Masker } from './secret-masker.js';
import type { HeldStep, StepCommand, StepLauncher } from './step-launcher.js';
import { jobEnv, paramEnvProblem } from './step-env.js';

export interface JobPlan {
  jobId: string;
  workflow: WorkflowDefinition;
  params: Record<string, unknown>;
  ref: string | null;
  debug: boolean;
  /** The whole job's limit in ms (null: none). */
  timeoutMs: number | null;
  /**
   * The job's limit as its error names it when it passes (jobTimeoutText): absent, `timeoutMs`
   * as the workflow's timeout.
   */
  timeoutText?: string;
  files: JobFiles;
  /** Every secret of the machine, by name: the listed ones are given to the job, all are masked. */
  secrets: Record<string, string>;
  /** Why the secrets file was refused, if it was: then no job gets any secret. */
  secretsProblem?: string | undefined;
  /** Between SIGTERM and SIGKILL to a step's process group. */
  killGraceMs: number;
  /** Downloads input FileRefs and uploads `file:` outputs (absent: both are passed on as they are). */
  transfer?: JobFileTransfer;
  /** What prepareJob answered when it already ran for this plan (absent: runWorkflow runs it). */
  prepared?: string | null;
  /** Starts the steps' processes (absent: each is spawned directly). */
  launcher?: StepLauncher;
  /**
   * The first step's process, held ready by the launcher while the job's start was reported
   * (firstStepCommand); runWorkflow lets it go, or drops it when the first step turns out to be
   * another command or the job ends before it.
   */
  held?: HeldStep | null;
}

/** One line of the job's log, secrets already masked; `step` is the step's index from 0. */
export interface JobLine {
  stream: LogStream;
  step: number | null;
  text: string;
  /**
   * The agent's own lines that matter more than news: `warn` for its warnings about the job (a
   * malformed `$DROVER_OUTPUT` line) and a cancelled job's last line, `error` for the last line
   * of a job that failed or timed out.
   */
  level?: 'warn' | 'error';
}

export interface JobHooks {
  onLine(line: JobLine): void;
  /** Holds the reading of a step's output while its lines are backlogged (run-step.ts). */
  outputPressure?: OutputPressure;
  /** A step's process started: its pid leads the step's process group. */
  onStepSpawn?(index: number, pid: number): void;
  /** Aborting it kills the running step; its `reason` (a string) becomes the error message. */
  signal: AbortSignal;
  /**
   * Between SIGTERM and SIGKILL to the step `signal` stops, read when it does: the workflow's
   * `cancelGrace` for a cancel (absent: the plan's `killGraceMs`).
   */
  stopGraceMs?: () => number;
}

export type JobResult = FinishJobRequest & { finishedAt: string };

/** The result of a job that ended `failed` without a step's exit code (no step ran, or the agent stopped it). */
export function failedResult(message: string): JobResult {
  return { status: 'failed', exitCode: null, errorMessage: message, output: {}, finishedAt: new Date().toISOString() };
}

/**
 * Creates a job's workspace, params.json (file params as they were sent: runWorkflow rewrites it
 * once input files are downloaded) and empty output file. Null when done, else why not.
 */
export async function prepareJob(files: JobFiles, params: Record<string, unknown>): Promise<string | null> {
  try {
    await prepareJobFiles(files, paramsWithoutUrls(params));
    return null;
  } catch (error) {
    return `could not prepare the job's workspace in ${files.dir}: ${jobFileError(error, files)}`;
  }
}

/**
 * Why a job's own file could not be made, in the words of the agent's other file errors (a full
 * disk says where to free space: `df -h` of `jobs/`, which exists when the job's directory does
 * not); an error those words do not cover keeps Node's message, which names the path.
 */
function jobFileError(error: unknown, files: JobFiles): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  const described = describeFileError(error, path.dirname(files.dir));
  return described === code || !described ? (error as Error).message : described;
}

/**
 * Runs a job's workflow in its workspace, for a trigger job as for an update job's install
 * (docs/agent.md, "The executor"): prepares the job's files, checks its secrets, downloads its
 * input files, runs each step under the smaller of its own timeout and what is left of the
 * job's, stops at the first step that does not exit 0, then reads `$DROVER_OUTPUT` and uploads
 * its `file:` outputs. Never throws: every failure becomes the job's result. Secret values are
 * masked in every line, output value and message it produces.
 */
export async function runWorkflow(plan: JobPlan, hooks: JobHooks): Promise<JobResult> {
  try {
    return await runSteps(plan, hooks);
  } finally {
    plan.held?.drop(); // nothing when it went
  }
}

/**
 * The first step's command as runWorkflow will start it, when it is known before the job runs:
 * no input files to fetch first (they change the params' variables) and nothing that fails the
 * job before its first step. Null otherwise.
 */
export function firstStepCommand(plan: JobPlan): StepCommand | null {
  const step = plan.workflow.steps[0];
  if (!step || (plan.transfer && hasInputFiles(plan.params)) || paramEnvProblem(plan.params) !== null) return null;
  const secrets = pickSecrets(plan);
  if (typeof secrets === 'string') return null;
  return stepCommand(step, plan.files.workspace, stepsEnv(plan, paramsWithoutUrls(plan.params), secrets));
}

async function runSteps(plan: JobPlan, hooks: JobHooks): Promise<JobResult> {
  const mask = createMasker(Object.values(plan.secrets));
  const emit = (stream: LogStream, step: number | null, text: string) =>
    hooks.onLine({ stream, step, text: mask(text) });
  const system = (text: string, step: number | null = null) => emit('system', step, text);
  /** An agent's own job-level line at a level above info. */
  const notice = (text: string, level: JobLine['level']) =>
    hooks.onLine({ stream: 'system', step: null, text: mask(text), ...(level ? { level } : {}) });
  const warn = (text: string) => notice(text, 'warn');
  const started = performance.now();
  /** What is left of the job's time (null: no limit); input downloads and output uploads count. */
  const remaining = () => (plan.timeoutMs === null ? null : plan.timeoutMs - (performance.now() - started));
  const finish = (status: JobResult['status'], exitCode: number | null, errorMessage: string | null) =>
    conclude(plan, hooks, { status, exitCode, errorMessage }, { mask, system, warn, notice, remaining });

  const prepared = plan.prepared === undefined ? await prepareJob(plan.files, plan.params) : plan.prepared;
  if (prepared !== null) return finish('failed', null, prepared);
  const clash = paramEnvProblem(plan.params);
  if (clash !== null) return finish('failed', null, clash);
  let envParams = paramsWithoutUrls(plan.params);
  const secrets = pickSecrets(plan);
  if (typeof secrets === 'string') return finish('failed', null, secrets);

  if (plan.transfer && hasInputFiles(plan.params)) {
    const inputs = await plan.transfer.fetchInputs({
      jobId: plan.jobId,
      params: plan.params,
      workspace: plan.files.workspace,
      signal: jobTimeSignal(hooks.signal, remaining()),
      log: (text) => system(text),
    });
    if (!inputs.ok) {
      const status =
        inputs.aborted === 'timeout' ? 'timed_out' : inputs.aborted === 'cancelled' ? 'cancelled' : 'failed';
      return finish(status, null, inputs.message);
    }
    envParams = inputs.envParams;
    try {
      writeParamsFile(plan.files, inputs.params);
    } catch (error) {
      return finish(
        'failed',
        null,
        `could not write the job's params file ${plan.files.paramsFile}: ${jobFileError(error, plan.files)}`,
      );
    }
  }

  const env = stepsEnv(plan, envParams, secrets);
  const steps = plan.workflow.steps;
  for (const [index, step] of steps.entries()) {
    const label = stepLabel(index, step);
    // (A first step already let go is stopped by runStep instead.)
    if (hooks.signal.aborted && !(index === 0 && plan.held?.went))
      return finish('cancelled', null, cancelMessage(hooks.signal));
    const left = remaining();
    if (left !== null && left <= 0) {
      return finish('timed_out', null, `the job timed out after ${timeoutText(plan)} before ${label}`);
    }
    const byStep = step.timeout !== undefined && (left === null || step.timeout <= left);
    const limit = byStep ? step.timeout! : left;
    system(`${label} of ${steps.length} started: ${describeCommand(step)}`, index);
    const stepStarted = performance.now();
    const outcome: StepOutcome = await runStep({
      step,
      workspace: plan.files.workspace,
      env,
      timeoutMs: limit === null ? null : Math.max(1, Math.ceil(limit)),
      signal: hooks.signal,
      onLine: (stream, text) => emit(stream, index, text),
      secrets: mask,
      pressure: hooks.outputPressure,
      killGraceMs: plan.killGraceMs,
      stopGraceMs: hooks.stopGraceMs,
      onSpawn: (pid) => hooks.onStepSpawn?.(index, pid),
      launcher: plan.launcher,
      held: index === 0 ? plan.held : null,
    });
    const took = formatDuration(performance.now() - stepStarted);
    switch (outcome.kind) {
      case 'exited':
        if (outcome.exitCode === 0) {
          system(`${label} finished in ${took}`, index);
          continue;
        }
        return finish('failed', outcome.exitCode, `${label} exited with code ${outcome.exitCode}`);
      case 'signaled':
        return finish('failed', null, `${label} was killed by signal ${outcome.signal}`);
      case 'spawn_failed':
        return finish('failed', null, `${label} ${outcome.message}`);
      case 'timed_out':
        return finish(
          'timed_out',
          null,
          byStep
            ? `${label} timed out after ${formatDuration(step.timeout!)} (the step's timeout)`
            : `the job timed out after ${timeoutText(plan)} during ${label}`,
        );
      case 'cancelled':
        return finish('cancelled', null, `${cancelMessage(hooks.signal)}; ${label} was stopped`);
    }
  }
  return finish('success', 0, null);
}

/** The job's variables for its steps (jobEnv), with its params as the steps see them and its secrets. */
function stepsEnv(plan: JobPlan, envParams: Record<string, unknown>, secrets: Record<string, string>) {
  return jobEnv({
    jobId: plan.jobId,
    workflowName: plan.workflow.name,
    ref: plan.ref,
    debug: plan.debug,
    workspace: plan.files.workspace,
    paramsFile: plan.files.paramsFile,
    outputFile: plan.files.outputFile,
    params: envParams,
    declared: (plan.workflow.paramsSchema ?? []).map((p) => p.name),
    secrets,
  });
}

/**
 * A job's limit as its error names it: `15m (the workflow's timeout)`, or, when the workflow sets
 * none, `1h (the agent's default job timeout, --job-timeout, as the workflow sets none)`, so that
 * no one looks for a `timeout:` the file does not have.
 */
export function jobTimeoutText(ms: number, fromWorkflow: boolean): string {
  return `${formatDuration(ms)} (${fromWorkflow ? "the workflow's timeout" : "the agent's default job timeout, --job-timeout, as the workflow sets none"})`;
}

const timeoutText = (plan: JobPlan): string => plan.timeoutText ?? jobTimeoutText(plan.timeoutMs!, true);

/** `step 2 (build)`, or `step 2` for a step without a name. */
export function stepLabel(index: number, step: WorkflowStep): string {
  return step.name ? `step ${index + 1} (${step.name})` : `step ${index + 1}`;
}

function describeCommand(step: WorkflowStep): string {
  if (step.shell) return step.run;
  return [step.run, ...(step.args ?? []).map((a) => (/^[\w./:=@+-]+$/.test(a) ? a : JSON.stringify(a)))].join(' ');
}

function cancelMessage(signal: AbortSignal): string {
  return typeof signal.reason === 'string' ? signal.reason : 'cancelled';
}

/** The listed secrets by name, or the message saying why the job cannot have them. */
function pickSecrets(plan: JobPlan): Record<string, string> | string {
  const names = plan.workflow.secretsKeys ?? [];
  if (names.length === 0) return {};
  if (plan.secretsProblem) {
    return `the workflow needs the secret${names.length > 1 ? 's' : ''} ${names.join(', ')} but the agent's secrets file was refused: ${plan.secretsProblem}`;
  }
  const missing = names.filter((name) => !Object.hasOwn(plan.secrets, name));
  if (missing.length > 0) {
    return `the secret${missing.length > 1 ? 's' : ''} ${missing.join(', ')} listed by the workflow ${missing.length > 1 ? 'are' : 'is'} not in the agent's secrets file (secrets.yaml); no step was run`;
  }
  return Object.fromEntries(names.map((name) => [name, plan.secrets[name]!]));
}

interface Outcome {
  status: JobResult['status'];
  exitCode: number | null;
  errorMessage: string | null;
}

/** The level of a job's last line in the agent's log, by its status. */
const LAST_LINE_LEVEL: Record<JobResult['status'], JobLine['level']> = {
  success: undefined,
  failed: 'error',
  timed_out: 'error',
  cancelled: 'warn',
};

interface Reporting {
  mask: Masker;
  system: (text: string) => void;
  warn: (text: string) => void;
  notice: (text: string, level: JobLine['level']) => void;
  remaining: () => number | null;
}

/**
 * The job's result: reads `$DROVER_OUTPUT`, uploads its `file:` values (a job that would succeed
 * fails when one cannot be delivered), masks secrets and logs the final line.
 */
async function conclude(plan: JobPlan, hooks: JobHooks, outcome: Outcome, r: Reporting): Promise<JobResult> {
  let { status, exitCode, errorMessage } = outcome;
  const read = await readOutputFile(plan.files.outputFile);
  if ('problem' in read) {
    // Output lost is never a success: the job's consumers would take the missing keys for none.
    r.warn(`error: ${read.problem}`);
    if (status === 'success') {
      status = 'failed';
      exitCode = null;
      errorMessage = read.problem;
    }
  }
  const parsed = parseOutputFile('text' in read ? read.text : '', r.mask);
  for (const warning of parsed.warnings) r.warn(`warning: ${warning}`);
  let values: Record<string, unknown> = parsed.values;
  if (plan.transfer && hasFileOutputs(parsed.values)) {
    const delivered = await plan.transfer.deliverOutputs({
      jobId: plan.jobId,
      output: parsed.values,
      workspace: plan.files.workspace,
      signal: jobTimeSignal(hooks.signal, status === 'timed_out' ? 0 : r.remaining()),
      log: (line) => r.system(line),
      mask: r.mask,
    });
    values = delivered.output;
    for (const problem of delivered.problems) r.warn(`error: ${problem}`);
    if (delivered.problems.length > 0 && status === 'success') {
      status = 'failed';
      exitCode = null;
      errorMessage = delivered.problems.join('; ');
    }
  }
  // Keys are masked like values; a Map, so that a key such as `__proto__` stays a plain key.
  const masked = new Map<string, unknown>();
  for (const [key, value] of Object.entries(values)) {
    const shown = r.mask(key);
    if (shown !== key && masked.has(shown)) {
      r.warn(`warning: two output keys read \`${shown}\` once secret values are masked; the last one is kept`);
    }
    masked.set(shown, maskDeep(value, r.mask));
  }
  let output: Record<string, unknown> = Object.fromEntries(masked);
  const bytes = Buffer.byteLength(JSON.stringify(output));
  if (bytes > MAX_OUTPUT_BYTES) {
    // Sent whole, it would be refused, and the job would never end on the coordinator.
    const problem =
      `the output is ${bytes} bytes as JSON, more than the ${MAX_OUTPUT_BYTES} a job may report; ` +
      'write large results to a file in the workspace and output `key=file:<path>` instead';
    r.warn(`error: ${problem}`);
    output = {};
    if (status === 'success') {
      status = 'failed';
      exitCode = null;
      errorMessage = problem;
    }
  }
  const message = errorMessage === null ? null : r.mask(errorMessage);
  r.notice(
    message === null
      ? `job finished: ${status}`
      : `job finished: ${message.startsWith(`${status}:`) ? '' : `${status}: `}${message}`,
    LAST_LINE_LEVEL[status],
  );
  return { status, exitCode, errorMessage: message, output, finishedAt: new Date().toISOString() };
}
