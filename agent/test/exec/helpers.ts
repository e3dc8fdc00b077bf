import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkflowDefinition, WorkflowStep } from '@drover/shared';
import { jobFiles } from '../../src/exec/job-files.js';
import {
  firstStepCommand,
  prepareJob,
  runWorkflow,
  type JobLine,
  type JobPlan,
  type JobResult,
} from '../../src/exec/run-workflow.js';

export const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

export function tempStateDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-exec-'));
}

export const sh = (run: string, extra: Partial<WorkflowStep> = {}): WorkflowStep => ({ run, shell: true, ...extra });

export interface RunOutcome {
  result: JobResult;
  lines: JobLine[];
  /** The step output lines only (stdout and stderr), as text. */
  out: string[];
  plan: JobPlan;
}

/** Runs a job of these steps in a fresh state dir and collects its lines. */
export async function runJob(
  stateDir: string,
  steps: WorkflowStep[],
  options: Partial<Omit<JobPlan, 'workflow'>> & {
    workflow?: Partial<WorkflowDefinition>;
    abort?: AbortSignal;
    /** Also called with each line (the collected `lines` get them too). */
    onLine?: (line: JobLine) => void;
    /** Prepare the job's files and hold the first step's process in `launcher` before the run, as a trigger job does while its start is reported. */
    holdFirst?: boolean;
  } = {},
): Promise<RunOutcome> {
  const jobId = options.jobId ?? `job-${Math.random().toString(36).slice(2)}`;
  const plan: JobPlan = {
    jobId,
    workflow: { name: 'wf', steps, ...options.workflow },
    params: options.params ?? {},
    ref: options.ref ?? null,
    debug: options.debug ?? false,
    timeoutMs: options.timeoutMs ?? null,
    files: jobFiles(stateDir, jobId),
    secrets: options.secrets ?? {},
    secretsProblem: options.secretsProblem,
    killGraceMs: options.killGraceMs ?? 300,
    ...(options.transfer ? { transfer: options.transfer } : {}),
    ...(options.launcher ? { launcher: options.launcher } : {}),
  };
  if (options.holdFirst) {
    plan.prepared = await prepareJob(plan.files, plan.params); // as a trigger job does first: the step's directory must exist
    const command = firstStepCommand(plan);
    if (!command || !options.launcher) throw new Error('holdFirst needs a launcher and a first step known ahead');
    plan.held = options.launcher.hold(command);
  }
  const lines: JobLine[] = [];
  const result = await runWorkflow(plan, {
    onLine: (line) => {
      lines.push(line);
      options.onLine?.(line);
    },
    signal: options.abort ?? new AbortController().signal,
  });
  const out = lines.filter((l) => l.stream !== 'system').map((l) => l.text);
  return { result, lines, out, plan };
}

/** True while `pid` runs; a zombie (dead, not yet reaped by its new parent) counts as dead. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true; // no procfs (macOS): trust kill(0)
  }
}

/** This process's children that are a launcher's spare (`/bin/dash -s`). */
export function spares(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return ppid === process.pid && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8') === '/bin/dash\0-s\0';
      } catch {
        return false;
      }
    })
    .map(Number)
    .filter(isAlive);
}
