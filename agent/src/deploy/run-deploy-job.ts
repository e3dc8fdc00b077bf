import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { DeployAssignment, DeviceState, ManifestPayload } from '@drover/shared';
import { jobFiles } from '../exec/job-files.js';
import { failedResult, jobTimeoutText, type JobResult } from '../exec/run-workflow.js';
import { jobTimeSignal } from '../files/job-phases.js';
import type { DownloadSettings } from '../files/download.js';
import { safeFilename } from '../files/safe-names.js';
import { beginAcceptedJob, type JobRunDeps, type RunJob } from '../jobs/job-run.js';
import type { JournalEntry } from '../jobs/journal.js';
import { LogShipper } from '../jobs/log-shipper.js';
import type { SendOutcome } from '../outbox/report-sender.js';
import type { Masker } from '../exec/secret-masker.js';
import type { Backoff } from '../util/backoff.js';
import type { DeployApi } from './deploy-api.js';
import { describeRelease, entryFor, eventMismatch } from './deploy-checks.js';
import { parseDeployEvent } from '../jobs/deploy-event.js';
import { refusedMessage, reportDeployState } from './deploy-report.js';
import type { DeployStateStore, InstalledRelease } from './deploy-state.js';
import {
  DeployRefusal,
  describeArtifact,
  fetchArtifact,
  verifyArtifactOnDisk,
  type ArtifactSource,
} from './fetch-artifact.js';
import type { JobStop } from '../jobs/job-stop.js';
import { installRelease, updateParams } from './install-release.js';
import { abortError, TransferAborted } from '../files/transfer-error.js';
import { paramsProblem } from '../workflows/params-check.js';
import type { ManifestSource } from './manifest-source.js';
import { HANDED_OVER, type HandedOver, type SelfUpdate } from '../self-update/self-update.js';

/** What the agent needs to run update jobs (docs/agent.md, "Over-the-air updates"). */
export interface DeployContext {
  api: DeployApi;
  manifests: ManifestSource;
  store: DeployStateStore;
  /** `--postpone-optional`: optional releases are not installed (forced ones always are). */
  postponeOptional: boolean;
  downloadAttempts?: number;
  downloadBackoff?: Backoff;
  /** Where partial downloads are kept, the minimum speed, the free-space check (the agent's run options). */
  downloads?: DownloadSettings;
  /** Masks secret values in the job's lines, its result and the reports (absent: nothing is masked). */
  masker?: () => Masker;
  /** Told the bytes of each artifact downloaded (the agent's counters, docs/metrics.md). */
  onDownloaded?(bytes: number): void;
  /** Installs the agent's own binary for the built-in update workflow (absent: not the single binary). */
  selfUpdate?: Pick<SelfUpdate, 'handles' | 'install'> | undefined;
}

export interface DeployJobDeps extends JobRunDeps {
  deploy: DeployContext;
}

/** The runner of update jobs the job manager is given (the daemon puts the two together). */
export function deployJobRunner(deploy: DeployContext): RunJob {
  return (deps, entry, accepted, stop) => runDeployJob({ ...deps, deploy }, entry, accepted, stop);
}

/** The `errorMessage` of an update job the local policy postponed (the coordinator keys on `postponed`). */
export const POSTPONED_MESSAGE = 'postponed by local policy';

/**
 * Runs one update job (a `deploy` event) when its turn in the queue comes: checks the event
 * against a freshly fetched signed manifest entry, applies the postponement policy, downloads
 * and verifies the artifact, runs the application's update workflow with it, reporting the
 * device state at each step (`downloading`, `verifying`, `installing`, then `installed`,
 * `failed`, `refused` or `postponed`), then finishes the job. Nothing is installed unless the
 * signature, the match with the event and the checksum all pass.
 */
export async function runDeployJob(
  deps: DeployJobDeps,
  entry: JournalEntry,
  accepted: Promise<SendOutcome>,
  stop: JobStop,
): Promise<void> {
  const begun = await beginAcceptedJob(deps, entry, accepted, stop.beforeStart);
  if (!begun) return;
  const { running } = begun;
  const shipper = new LogShipper(entry.jobId, (report) => deps.send(report), deps.logBatch);
  const parsed = parseDeployEvent(entry.assignment);
  let result: JobResult | HandedOver;
  if (!parsed.ok) {
    const message = `refused: the update job's assignment is not usable (${parsed.problem}); nothing was installed`;
    deps.logger.error({ jobId: entry.jobId }, message);
    result = failedResult(message);
  } else {
    result = await new DeployRun(deps, parsed.assignment, shipper, stop).run();
  }
  shipper.flush();
  // The agent restarts into its new binary, which reports the job once it has connected (self-update/).
  if (result === HANDED_OVER) return;
  deps.finish(running, result);
}

/**
 * An update job found running at start (the agent was killed while it downloaded or installed):
 * its release's attempt is recorded as failed, so that the report after connecting says so
 * (`failed` and the job's message) rather than `idle`, which would hide the interrupted install
 * from the binding; the coordinator retries it with its backoff, as any failure. Other jobs: nothing.
 */
export function rememberInterruptedUpdate(
  store: Pick<DeployStateStore, 'update'>,
  entry: JournalEntry,
  message: string,
  logger: Logger,
): void {
  if (entry.assignment.kind !== 'update') return;
  const parsed = parseDeployEvent(entry.assignment);
  if (!parsed.ok) return;
  const { applicationId, params } = parsed.assignment;
  try {
    store.update(applicationId, {
      lastFailure: { releaseId: params.release_id, state: 'failed', error: message, at: new Date().toISOString() },
    });
  } catch (error) {
    logger.error({ err: error, applicationId }, `cannot write deploy/state.json: ${(error as Error).message}`);
  }
}

class DeployRun {
  readonly #log: Logger;
  readonly #appId: string;
  readonly #release: InstalledRelease;
  #slug: string;
  readonly #deps: DeployJobDeps;
  readonly #job: DeployAssignment;
  readonly #shipper: LogShipper;
  readonly #signal: AbortSignal;
  readonly #stop: JobStop;

  constructor(deps: DeployJobDeps, job: DeployAssignment, shipper: LogShipper, stop: JobStop) {
    this.#deps = deps;
    this.#job = job;
    this.#shipper = shipper;
    this.#stop = stop;
    this.#signal = stop.signal;
    this.#appId = job.applicationId;
    this.#slug = job.applicationId;
    this.#release = { releaseId: job.params.release_id, version: job.params.version, sequence: job.params.sequence };
    this.#log = deps.logger.child({ jobId: job.jobId, workflow: job.workflowName, applicationId: job.applicationId });
  }

  async run(): Promise<JobResult | HandedOver> {
    const started = performance.now();
    const { deploy } = this.#deps;
    // The job's time counts from its start, the manifest fetch included (the event's workflow is
    // the signed entry's, or the job is refused).
    const fromWorkflow = this.#job.timeoutMs ?? this.#deps.workflow(this.#job.workflowName)?.timeout ?? null;
    const timeoutMs = fromWorkflow ?? this.#deps.defaultJobTimeoutMs;
    const remaining = () => (timeoutMs === null ? null : timeoutMs - (performance.now() - started));
    this.#say(`update to ${describeRelease(this.#release)}: checking it against the signed manifest`);
    const checked = await this.#signedEntry(jobTimeSignal(this.#signal, remaining()));
    if ('result' in checked) return checked.result;
    const payload = checked.payload;
    this.#slug = payload.slug;
    const desired = payload.desired!;
    this.#say(`the signed manifest confirms release ${describeRelease(desired)} of ${payload.slug}`);

    // Only the signed entry decides whether the update is forced: the event's `params.forced` is
    // unsigned, and a forged `true` would get past --postpone-optional. Both come from the same
    // state on the coordinator, the entry computed at this request: the newer word, so an event
    // that disagrees is not refused (eventMismatch refuses what would install another release).
    if (deploy.postponeOptional && !payload.forced) return this.#postpone();

    const builtIn = deploy.selfUpdate?.handles(payload.update_workflow) ? deploy.selfUpdate : undefined;
    const workflow = this.#deps.workflow(payload.update_workflow);
    if (!workflow) {
      return this.#end(
        'failed',
        `the update workflow ${payload.update_workflow} is not defined on this agent (no valid workflow file with that name); nothing was installed`,
      );
    }
    // The values the workflow will get must fit its declared params, as a trigger's must: a file
    // that keeps a value out of a shell command with a pattern keeps it out here too. The agent
    // itself decides which update params there are, so a workflow need not declare them all: only
    // the ones it declares are checked (and one it requires must be among them).
    const declared = new Set((workflow.paramsSchema ?? []).map((p) => p.name));
    const given = Object.fromEntries(
      Object.entries(updateParams(payload, this.#job.params.artifact)).filter(([name]) => declared.has(name)),
    );
    const refused = paramsProblem(workflow, given);
    if (refused) {
      return this.#end('refused', `the update workflow ${workflow.name} does not take this release: ${refused}`);
    }

    const files = jobFiles(this.#deps.stateDir, this.#job.jobId);
    const target = path.join(
      files.workspace,
      'inputs',
      'artifact',
      safeFilename(this.#job.params.artifact.filename, 'artifact'),
    );
    await this.#report('downloading');
    this.#say(`downloading the artifact ${describeArtifact(target, desired.size)}`);
    const downloaded = await fetchArtifact({
      target,
      source: sourceOf(payload),
      refresh: () => this.#freshSource(jobTimeSignal(this.#signal, remaining())),
      signal: jobTimeSignal(this.#signal, remaining()),
      log: (text) => this.#say(text),
      label: `artifact ${payload.slug} ${desired.version}`,
      applicationId: this.#appId,
      ...(deploy.downloads ? { downloads: deploy.downloads } : {}),
      ...(deploy.downloadAttempts ? { attempts: deploy.downloadAttempts } : {}),
      ...(deploy.downloadBackoff ? { backoff: deploy.downloadBackoff } : {}),
    });
    if (downloaded.ok) deploy.onDownloaded?.(downloaded.bytes);
    if (!downloaded.ok) {
      if (downloaded.refused) return this.#end('refused', `the downloaded artifact was refused: ${downloaded.message}`);
      const status = downloaded.aborted === 'timeout' ? 'timed_out' : downloaded.aborted ? 'cancelled' : 'failed';
      return this.#end('failed', `the artifact could not be downloaded: ${downloaded.message}`, status);
    }

    await this.#report('verifying');
    const problem = await verifyArtifactOnDisk(
      target,
      { size: desired.size, sha256: desired.checksum_sha256 },
      this.#signal,
    ).catch((error: unknown) => `the artifact could not be read back: ${(error as Error).message}`);
    if (problem) {
      fs.rmSync(target, { force: true });
      return this.#end('refused', problem);
    }
    this.#say(`artifact verified: ${desired.size} bytes, SHA-256 ${desired.checksum_sha256.toLowerCase()}`);

    await this.#report('installing');
    this.#say(`installing ${payload.slug} ${desired.version} with the workflow ${workflow.name}`);
    const result = builtIn
      ? await builtIn.install({
          jobId: this.#job.jobId,
          applicationId: this.#appId,
          release: {
            releaseId: desired.release_id,
            version: desired.version,
            sequence: desired.sequence,
            channel: desired.channel,
          },
          artifactPath: target,
          say: (text) => this.#say(text),
        })
      : await installRelease({
          deps: this.#deps,
          job: this.#job,
          workflow,
          payload,
          artifactPath: target,
          files,
          timeoutMs: remaining(),
          // The steps get what is left; a timeout names the job's whole limit, not that.
          ...(timeoutMs === null ? {} : { timeoutText: jobTimeoutText(timeoutMs, fromWorkflow !== null) }),
          stop: this.#stop,
          shipper: this.#shipper,
          log: this.#log,
        });
    if (result === HANDED_OVER) return result;
    if (result.status !== 'success') {
      return this.#end(
        'failed',
        `the update workflow did not succeed: ${result.errorMessage ?? result.status}`,
        result,
      );
    }
    const installed: InstalledRelease = {
      releaseId: desired.release_id,
      version: desired.version,
      sequence: desired.sequence,
      channel: desired.channel,
    };
    this.#remember({ current: installed, postponed: null, lastFailure: null });
    this.#log.info(`installed ${payload.slug} ${describeRelease(installed)}`);
    await this.#report('installed');
    return result;
  }

  /** The verified manifest entry of the application, checked against the event; else the job's end. */
  async #signedEntry(signal: AbortSignal): Promise<{ payload: ManifestPayload } | { result: JobResult }> {
    let entry;
    try {
      entry = await this.#checkedEntry(signal);
    } catch (error) {
      if (signal.aborted) {
        // A cancel, the shutdown or the job's timeout, while the manifest was on its way.
        const aborted = abortError(signal);
        const status = aborted instanceof TransferAborted && aborted.why === 'timeout' ? 'timed_out' : 'cancelled';
        return {
          result: await this.#end(
            'failed',
            `${aborted.message} while the signed manifest was being fetched; nothing was installed`,
            status,
          ),
        };
      }
      return {
        result: await this.#end(
          'failed',
          `could not fetch the signed manifest from the coordinator (${(error as Error).message}); nothing was installed`,
        ),
      };
    }
    if (!entry.ok) return { result: await this.#end('refused', entry.message) };
    return { payload: entry.payload };
  }

  /** A fresh download URL from a newly fetched manifest that still names this release. */
  async #freshSource(signal: AbortSignal): Promise<ArtifactSource> {
    const entry = await this.#checkedEntry(signal);
    if (!entry.ok) throw new DeployRefusal(entry.message);
    return sourceOf(entry.payload);
  }

  /**
   * The application's entry of a freshly fetched and verified manifest, checked against the
   * event, or why it is refused. Throws when the manifest cannot be fetched.
   */
  async #checkedEntry(
    signal: AbortSignal,
  ): Promise<{ ok: true; payload: ManifestPayload } | { ok: false; message: string }> {
    const entry = entryFor(await this.#deps.deploy.manifests.fetch(signal), this.#appId);
    if (!entry.ok) return entry;
    const mismatch = eventMismatch(this.#job, entry.payload);
    return mismatch ? { ok: false, message: mismatch } : entry;
  }

  async #postpone(): Promise<JobResult> {
    const message = this.#mask(
      `${POSTPONED_MESSAGE} (--postpone-optional): the optional release ${describeRelease(this.#release)} of ${this.#slug} was not installed`,
    );
    this.#remember({ postponed: this.#release });
    this.#log.warn(message);
    this.#shipper.add({ stream: 'system', step: null, text: message });
    await this.#report('postponed');
    return { ...failedResult(message), status: 'cancelled' };
  }

  /**
   * Ends the deployment without installing: logs why, remembers the failure (the pull fallback
   * then reports it rather than asking again at once), reports the state and gives the job's result.
   */
  async #end(
    state: Extract<DeviceState, 'failed' | 'refused'>,
    reason: string,
    outcome: JobResult | JobResult['status'] = 'failed',
  ): Promise<JobResult> {
    const message = this.#mask(state === 'refused' ? refusedMessage(reason) : reason);
    const text = state === 'refused' ? `deployment refused: ${message}` : `deployment failed: ${message}`;
    this.#log.error(text);
    this.#shipper.add({ stream: 'system', step: null, text });
    this.#remember({
      lastFailure: { releaseId: this.#release.releaseId, state, error: message, at: new Date().toISOString() },
    });
    await this.#report(state, message);
    if (typeof outcome === 'object') return outcome;
    return { ...failedResult(state === 'refused' ? `refused: ${message}` : message), status: outcome };
  }

  #say(line: string): void {
    const text = this.#mask(line);
    this.#log.info(text);
    this.#shipper.add({ stream: 'system', step: null, text });
  }

  /** The text with secret values masked, for a line of the job's log or of the agent's. */
  #mask(text: string): string {
    const masker = this.#deps.deploy.masker;
    return masker ? masker()(text) : text;
  }

  async #report(state: DeviceState, error: string | null = null): Promise<void> {
    await reportDeployState(this.#deps.deploy, this.#log, this.#appId, state, error);
  }

  #remember(patch: Parameters<DeployStateStore['update']>[1]): void {
    try {
      this.#deps.deploy.store.update(this.#appId, patch);
    } catch (error) {
      this.#log.error({ err: error }, `cannot write deploy/state.json: ${(error as Error).message}`);
    }
  }
}

function sourceOf(payload: ManifestPayload): ArtifactSource {
  const desired = payload.desired!;
  return { url: desired.download_url, size: desired.size, sha256: desired.checksum_sha256.toLowerCase() };
}
