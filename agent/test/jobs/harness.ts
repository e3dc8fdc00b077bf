import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { JobAssignment, WorkflowDefinition } from '@drover/shared';
import type { StepLauncher } from '../../src/exec/step-launcher.js';
import type { HttpAnswer } from '../../src/http/client.js';
import { JobManager } from '../../src/jobs/job-manager.js';
import type { RunJob } from '../../src/jobs/job-run.js';
import { Journal } from '../../src/jobs/journal.js';
import { Outbox } from '../../src/outbox/outbox.js';
import { ReportSender } from '../../src/outbox/report-sender.js';
import { CountersWriter } from '../../src/status/counters-writer.js';
import type { Report } from '../../src/outbox/report.js';
import { Backoff } from '../../src/util/backoff.js';
import type { LoadedSecrets } from '../../src/workflows/index.js';
import { captureLogger } from '../log-capture.js';

export interface Harness {
  stateDir: string;
  manager: JobManager;
  journal: Journal;
  outbox: Outbox;
  sender: ReportSender;
  /** The agent's counters (`counters.json` of the state directory). */
  counters: CountersWriter;
  /** Every report the transport was asked to send, in order. */
  sent: Report[];
  records: Record<string, any>[];
  /** What the coordinator answers (default 200). */
  answer: (report: Report) => Promise<HttpAnswer>;
  /** The reports of one job, as `kind` strings (logs batches folded). */
  kinds(jobId: string): string[];
  finishOf(jobId: string): Record<string, any> | undefined;
  /** A daemon restart: a new manager over the same state directory. */
  restart(): Harness;
  /** The workflow file changed (or was added): jobs from now on see this definition. */
  define(workflow: WorkflowDefinition): void;
  close(): void;
  /** As the daemon stops: the jobs shut down, the reports in flight settled (for 200 ms at most), the sender closed. */
  stop(): Promise<void>;
}

export const sh = (run: string) => ({ run, shell: true });

export function harness(
  workflows: WorkflowDefinition[],
  options: {
    capacity?: number;
    stateDir?: string;
    answer?: Harness['answer'];
    /** The secrets file as the daemon reads it (default: none). */
    loadSecrets?: () => Promise<LoadedSecrets>;
    /** Runs update jobs (deploy events); absent: they are ignored, as without deployments. */
    runUpdateJob?: (stateDir: string) => RunJob;
    /** Starts the steps (absent: each is spawned). */
    launcher?: StepLauncher;
    /** `--job-timeout` (default 60 s). */
    defaultJobTimeoutMs?: number;
  } = {},
): Harness {
  const stateDir = options.stateDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'drover-agent-jobs-'));
  const { logger, records } = captureLogger();
  const sent: Report[] = [];
  const byName = new Map(workflows.map((w) => [w.name, w]));
  const journal = Journal.open(stateDir);
  const outbox = Outbox.open(path.join(stateDir, 'outbox'));
  const counters = new CountersWriter(stateDir);
  const h = {} as Harness;
  h.answer = options.answer ?? ((r) => Promise.resolve(answered(r)));
  const sender = new ReportSender({
    outbox,
    transport: (report) => {
      sent.push(report);
      return h.answer(report);
    },
    logger,
    backoff: new Backoff({ baseMs: 60_000, capMs: 60_000 }),
    onSettled: (report) => journal.markFinalDelivered(report),
  });
  const manager = new JobManager({
    stateDir,
    journal,
    outbox,
    sender,
    capacity: options.capacity ?? 4,
    workflows: {
      get: (name) => byName.get(name),
      problemWith: (name) => (byName.has(name) ? null : `no valid workflow named ${name}`),
    },
    loadSecrets: options.loadSecrets ?? (() => Promise.resolve({ secrets: {} })),
    logger,
    counters,
    defaultJobTimeoutMs: options.defaultJobTimeoutMs ?? 60_000,
    killGraceMs: 200,
    logBatch: { intervalMs: 20 },
    ...(options.runUpdateJob ? { runUpdateJob: options.runUpdateJob(stateDir) } : {}),
    ...(options.launcher ? { launcher: options.launcher } : {}),
  });
  Object.assign(h, {
    stateDir,
    manager,
    journal,
    outbox,
    sender,
    counters,
    sent,
    records,
    kinds: (jobId: string) =>
      sent
        .filter((r) => r.jobId === jobId)
        .map((r) => r.kind)
        .filter((k, i, all) => k !== 'logs' || all[i - 1] !== 'logs'),
    finishOf: (jobId: string) => {
      const report = sent.find((r) => r.jobId === jobId && r.kind === 'finish');
      return report?.kind === 'finish' ? (report.body as Record<string, any>) : undefined;
    },
    define: (workflow: WorkflowDefinition) => byName.set(workflow.name, workflow),
    restart: () => {
      sender.close();
      counters.close();
      return harness(workflows, { ...options, stateDir });
    },
    close: () => {
      sender.close();
      counters.close();
    },
    async stop() {
      await manager.shutdown(0);
      await sender.flush(200); // the reports in flight settle (and mark the journal) before the files go
      sender.close();
      counters.close();
    },
  });
  return h;
}

let counter = 0;
export function assignment(workflowName: string, fields: Partial<JobAssignment> = {}): JobAssignment {
  counter += 1;
  return {
    jobId: `00000000-0000-4000-8000-${String(counter).padStart(12, '0')}`,
    kind: 'trigger',
    workflowName,
    params: {},
    ref: null,
    debug: false,
    timeoutMs: null,
    status: 'pending',
    createdAt: new Date().toISOString(),
    ...fields,
  };
}

/** The coordinator's answer to a report that went through: its job and a status (delivery-policy.ts). */
export const answered = (report: Pick<Report, 'jobId'>): HttpAnswer => ({
  status: 200,
  body: { jobId: report.jobId, status: 'pending' },
});
