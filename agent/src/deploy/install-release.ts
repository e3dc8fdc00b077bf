import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { DeployAssignment, ManifestPayload, WorkflowDefinition } from '@drover/shared';
import type { JobFiles } from '../exec/job-files.js';
import { runWorkflow, type JobResult } from '../exec/run-workflow.js';
import type { JobFileTransfer } from '../files/job-file-transfer.js';
import type { LocalFileRef } from '../files/input-files.js';
import { jobHooks, loadJobSecrets, type JobRunDeps } from '../jobs/job-run.js';
import type { JobStop } from '../jobs/job-stop.js';
import type { LogShipper } from '../jobs/log-shipper.js';

export interface InstallRequest {
  deps: JobRunDeps;
  job: DeployAssignment;
  workflow: WorkflowDefinition;
  /** The verified manifest entry: its values are the ones given to the workflow. */
  payload: ManifestPayload;
  /** The downloaded and verified artifact. */
  artifactPath: string;
  files: JobFiles;
  /** What is left of the job's time (null: no limit). */
  timeoutMs: number | null;
  /** The job's whole limit as its error names it (jobTimeoutText). */
  timeoutText?: string;
  /** Stops the update workflow's steps (a cancel, the shutdown). */
  stop: JobStop;
  shipper: LogShipper;
  log: Logger;
}

/**
 * Runs the application's update workflow with the deploy params (docs/ota.md),
 * taken from the signed manifest, the artifact being the downloaded file: in `params.json` a
 * FileRef with its local `path` (like any input file), in `DROVER_PARAM_ARTIFACT` the path.
 */
export async function installRelease(req: InstallRequest): Promise<JobResult> {
  const { deps, job, payload } = req;
  const desired = payload.desired!;
  const artifact: LocalFileRef = {
    __type: 'FileRef',
    id: job.params.artifact.id,
    filename: path.basename(req.artifactPath),
    contentType: typeof job.params.artifact.contentType === 'string' ? job.params.artifact.contentType : null,
    size: fs.statSync(req.artifactPath).size,
    sha256: desired.checksum_sha256.toLowerCase(),
    path: req.artifactPath,
  };
  const { artifact: _ref, ...params } = updateParams(payload, artifact);
  const secrets = await loadJobSecrets(deps, req.workflow, req.log);
  return runWorkflow(
    {
      jobId: job.jobId,
      workflow: req.workflow,
      params: { artifact, ...params },
      ref: null,
      debug: job.debug,
      timeoutMs: req.timeoutMs === null ? null : Math.max(1, Math.ceil(req.timeoutMs)),
      ...(req.timeoutText === undefined ? {} : { timeoutText: req.timeoutText }),
      files: req.files,
      secrets: secrets.secrets,
      secretsProblem: secrets.problem,
      killGraceMs: deps.killGraceMs,
      transfer: preparedInputs({ artifact, ...params }, { artifact: req.artifactPath, ...params }, deps.transfer),
      ...(deps.launcher ? { launcher: deps.launcher } : {}),
    },
    jobHooks(deps.journal, job.jobId, req.log, req.shipper, req.stop, req.workflow),
  );
}

/**
 * The params an update workflow gets: the artifact's FileRef and the release's values from the
 * verified manifest entry (docs/agent.md, "The update workflow"), never the event's. Checked
 * against the workflow's declared params before anything is downloaded (run-deploy-job.ts).
 */
export function updateParams(
  payload: ManifestPayload,
  artifact: unknown,
): Record<string, unknown> & { artifact: unknown } {
  const desired = payload.desired!;
  return {
    artifact,
    release_id: desired.release_id,
    version: desired.version,
    channel: desired.channel,
    sequence: desired.sequence,
    forced: payload.forced, // the signed value, never the event's (run-deploy-job.ts)
    checksum_sha256: desired.checksum_sha256.toLowerCase(),
  };
}

/**
 * A file transfer whose input phase hands over the already downloaded artifact (it was
 * verified against the signed checksum before this point); outputs go through the daemon's
 * transfer as for any job.
 */
function preparedInputs(
  params: Record<string, unknown>,
  envParams: Record<string, unknown>,
  transfer: JobFileTransfer | undefined,
): JobFileTransfer {
  return {
    // Its bytes were counted when it was downloaded (run-deploy-job.ts).
    fetchInputs: () => Promise.resolve({ ok: true, params, envParams, count: 1, bytes: 0 }),
    // Without a transfer (unit tests), `file:` values stay text, as runWorkflow does.
    deliverOutputs: (req) =>
      transfer ? transfer.deliverOutputs(req) : Promise.resolve({ output: req.output, problems: [], bytes: 0 }),
  };
}
