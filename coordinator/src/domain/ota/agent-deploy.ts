import { randomUUID } from 'node:crypto';
import {
  manifestSigningBytes,
  type DeployReportRequest,
  type DeployReportResponse,
  type DesiredManifestResponse,
  type ManifestEntry,
  type ManifestPayload,
} from '@drover/shared';
import type { Config } from '../../config/config.js';
import type { Application } from '../model/applications.js';
import type { DeviceBinding } from '../model/device-bindings.js';
import type { StoredFile } from '../model/files.js';
import type { Release } from '../model/releases.js';
import { notFound } from '../../errors.js';
import { isoNow } from '../../util/clock.js';
import type { DownloadUrlView } from '../files/view.js';
import type { OtaContext } from './context.js';
import { desiredState } from './desired-state.js';
import { appReleases, type AppReleases, type ReleaseCacheRepositories } from './release-cache.js';
import { reportedInstallation } from './report.js';
import { installationRef, releaseRef } from './views.js';

/**
 * The agent's side of OTA (signed endpoints; docs/ota.md, "Agent endpoints"): the signed
 * desired manifest and the report of the observed installation.
 */

export interface AgentDeployContext extends OtaContext {
  repos: OtaContext['repos'] & ReleaseCacheRepositories;
  files: {
    findActiveManyInOrg(orgId: string, fileIds: readonly string[]): Promise<StoredFile[]>;
    issueDownload(file: StoredFile): Promise<DownloadUrlView>;
  };
  serverKey: { sign(message: Uint8Array): string };
  config: Pick<Config, 'manifestTtlSeconds'>;
}

interface CallingAgent {
  id: string;
  orgId: string;
}

const NOTHING_WITHHELD: ReadonlySet<string> = new Set();

/** 122 random bits (a UUID v4 from node:crypto's buffered entropy: cheaper than 16 fresh bytes). */
const manifestNonce = () => randomUUID();

/**
 * One signed entry per application bound to the agent (applications not deleted), in bind
 * order. `desired` carries a download URL issued now; `issued_at` and `expires_at` are Unix
 * seconds (`DROVER_MANIFEST_TTL_SECONDS` apart), and `agent_id` binds the entry to the caller.
 * `request_nonce`, the `X-Nonce` of the signed request answered, binds it to that request: the
 * agent knows the entry was issued for it now, whatever its clock and the answer's `Date` say (a
 * stale answer replayed with its old `Date` is refused). Without a nonce (benchmarks calling in
 * process) the entry has none.
 */
export async function desiredManifest(
  ctx: AgentDeployContext,
  agent: CallingAgent,
  requestNonce: string | null = null,
): Promise<DesiredManifestResponse> {
  const generation = await ctx.repos.changeCounter.otaGeneration();
  const bindings = await ctx.repos.deviceBindings.listByAgent(agent.id);
  const apps = new Map<string, AppReleases>();
  const bound: { binding: DeviceBinding; entry: AppReleases }[] = [];
  for (const binding of bindings) {
    let entry = apps.get(binding.applicationId);
    if (!entry) {
      const found = await appReleases(ctx.repos, binding.applicationId, generation);
      if (!found || found.app.orgId !== agent.orgId) continue;
      entry = found;
      apps.set(found.app.id, entry);
    }
    bound.push({ binding, entry });
  }
  // Releases a staged rollout has not brought to this device yet: read only for applications with one.
  const withheld = await ctx.repos.rollouts.withheld(
    bound.filter(({ entry }) => entry.staged).map(({ binding }) => binding.id),
  );
  const items = bound.map(({ binding, entry }) => ({
    binding,
    entry,
    state: desiredState({
      channel: binding.channel,
      releases: entry.releases,
      current: binding.current,
      withheld: withheld.get(binding.id) ?? NOTHING_WITHHELD,
    }),
  }));
  // Artifacts not yet remembered by their application's cache entry, read in one query.
  const missing = [
    ...new Set(
      items.flatMap(({ entry, state }) =>
        state.desired && !entry.artifacts.has(state.desired.artifactFileId) ? [state.desired.artifactFileId] : [],
      ),
    ),
  ];
  const found = new Map(
    missing.length === 0
      ? []
      : (await ctx.files.findActiveManyInOrg(agent.orgId, missing)).map((f) => [f.id, f] as const),
  );
  for (const { entry, state } of items) {
    const file = state.desired && found.get(state.desired.artifactFileId);
    if (file) entry.artifacts.set(file.id, file);
  }
  const issuedAt = Math.floor(ctx.clock.now() / 1000);
  const expiresAt = issuedAt + ctx.config.manifestTtlSeconds;
  const entries: ManifestEntry[] = [];
  for (const { binding, entry, state } of items) {
    const { app } = entry;
    const payload: ManifestPayload = {
      agent_id: agent.id,
      application_id: app.id,
      slug: app.slug,
      channel: binding.channel,
      update_workflow: app.updateWorkflowName,
      current: binding.current
        ? {
            release_id: binding.current.releaseId,
            version: binding.current.version,
            sequence: binding.current.sequence,
          }
        : null,
      desired: state.desired
        ? await desiredEntry(ctx, app, state.desired, entry.artifacts.get(state.desired.artifactFileId))
        : null,
      min_version: state.minVersion,
      min_sequence: state.minSequence,
      forced: state.forced,
      issued_at: issuedAt,
      expires_at: expiresAt,
      nonce: manifestNonce(),
      ...(requestNonce === null ? {} : { request_nonce: requestNonce }),
      ...releaseKeysOf(app),
    };
    entries.push({ payload, signature: ctx.serverKey.sign(manifestSigningBytes(payload)) });
  }
  return { apps: entries };
}

/** The application's release keys for the manifest (docs/ota.md, "Release keys"); nothing without keys. */
function releaseKeysOf(app: Application): Partial<ManifestPayload> {
  if (!app.releaseKeys) return {};
  const rotations = app.releaseKeyRotations;
  return {
    release_keys: app.releaseKeys,
    release_key_generation: rotations.at(-1)?.generation ?? 0,
    ...(rotations.length > 0 ? { release_key_rotations: rotations } : {}),
  };
}

/** A file that is no longer active gets an empty URL (the agent cannot download it and reports a failure). */
async function desiredEntry(ctx: AgentDeployContext, app: Application, release: Release, file: StoredFile | undefined) {
  const download = file ? await ctx.files.issueDownload(file) : { downloadUrl: '', expiresInSeconds: 0 };
  return {
    release_id: release.id,
    version: release.version,
    sequence: release.sequence,
    channel: release.channel,
    workflow_name: app.updateWorkflowName,
    checksum_sha256: release.checksumSha256,
    size: release.size,
    download_url: download.downloadUrl,
    download_expires_in: download.expiresInSeconds,
    ...(app.releaseKeys ? { signature: release.signature } : {}),
  };
}

/**
 * Stores the agent's report and re-evaluates the binding at once (so the first report sets the
 * baseline). 404 when the agent is not bound to the application; 422 when the reported release
 * is not one of the application's or disagrees with it.
 */
export async function recordReport(
  ctx: OtaContext,
  agent: CallingAgent,
  report: DeployReportRequest,
): Promise<DeployReportResponse> {
  const applicationId = report.applicationId.toLowerCase();
  const binding = await ctx.repos.deviceBindings.findForAgent(agent.id, applicationId);
  if (!binding || binding.orgId !== agent.orgId) throw notFound('Application');
  const release = report.currentReleaseId
    ? await ctx.repos.releases.findInApp(applicationId, report.currentReleaseId.toLowerCase())
    : null;
  const current = reportedInstallation(report, release);
  const [outcome] = await ctx.ota.evaluate([
    {
      bindingId: binding.id,
      reason: 'report',
      report: { current, state: report.state, error: report.error, at: isoNow(ctx.clock) },
    },
  ]);
  if (!outcome?.binding || !outcome.state) throw notFound('Application');
  return {
    applicationId,
    current: installationRef(outcome.binding.current),
    desired: releaseRef(outcome.state.desired),
    forced: outcome.state.forced,
    state: outcome.binding.state,
    activeJobId: outcome.binding.activeJobId,
  };
}
