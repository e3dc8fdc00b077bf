import type { Application } from '../model/applications.js';
import type {
  ArtifactProblem,
  CheckArtifact,
  DraftPatch,
  Release,
  ReleaseChange,
  StoredArtifact,
  ReleaseStatus,
  UpdatePolicy,
} from '../model/releases.js';
import { AppError, invalid, notFound } from '../../errors.js';
import { isoNow } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import type { Rollout, YankRelease } from '../model/rollouts.js';
import type { OtaContext } from './context.js';

/**
 * Releases (docs/ota.md): created as drafts, published
 * (devices of the channel converge to it), yanked (they converge to the previous one). A
 * published release is immutable.
 */

export interface CreateReleaseInput {
  version: string;
  artifactFileId: string;
  channel?: string | undefined;
  updatePolicy?: UpdatePolicy | undefined;
  notes?: string | null | undefined;
  /** Required, with `signature`, when the application has release keys (docs/ota.md, "Release keys"). */
  sequence?: number | undefined;
  signature?: string | undefined;
}

const ARTIFACT_PROBLEMS: Record<ArtifactProblem, (status?: string) => string> = {
  not_found: () => 'no stored file with this id in the organization',
  not_active: (status) => `the file must be active (uploaded and completed), got \`${status ?? 'unknown'}\``,
  not_persistent: () => "the artifact must be uploaded with cleanupRule 'persistent', got a file that expires ('ttl')",
};

/** A release's artifact is a file of the organization, active (so its size and checksum are known) and persistent. */
export const checkArtifact: CheckArtifact = (file: StoredArtifact) => {
  if (!file) return { ok: false, problem: 'not_found' };
  if (file.status !== 'active' || file.size === null || file.sha256 === null) {
    return { ok: false, problem: 'not_active', status: file.status };
  }
  if (file.cleanupRule !== 'persistent') return { ok: false, problem: 'not_persistent' };
  return { ok: true, size: file.size, sha256: file.sha256 };
};

/**
 * A draft with the next sequence of the application (or the one given); 422 when the artifact
 * cannot back a release or the signature is missing or wrong, 409 for a sequence not above every
 * existing one (release-signature.ts).
 */
export async function createRelease(ctx: OtaContext, app: Application, input: CreateReleaseInput): Promise<Release> {
  const result = await ctx.repos.releases.create({
    id: newId(),
    orgId: app.orgId,
    applicationId: app.id,
    version: input.version,
    channel: input.channel ?? app.defaultChannel,
    updatePolicy: input.updatePolicy ?? 'optional',
    artifactFileId: input.artifactFileId.toLowerCase(),
    notes: input.notes ?? null,
    sequence: input.sequence ?? null,
    signature: input.signature ?? null,
    createdAt: isoNow(ctx.clock),
  });
  if (result.outcome === 'not_found') throw notFound('Application');
  if (result.outcome === 'bad_artifact') {
    throw invalid('body.artifactFileId', ARTIFACT_PROBLEMS[result.problem](result.status));
  }
  if (result.outcome === 'refused') {
    const { refusal } = result;
    if (refusal.kind === 'invalid') throw invalid(refusal.path, refusal.message);
    throw new AppError('conflict', refusal.message, {
      details: { sequence: input.sequence, maxSequence: refusal.maxSequence },
    });
  }
  return result.release;
}

export async function findRelease(ctx: OtaContext, app: Application, releaseId: string): Promise<Release> {
  const release = await ctx.repos.releases.findInApp(app.id, releaseId);
  if (!release) throw notFound('Release');
  return release;
}

const TRANSITION_CONFLICT: Record<'publish' | 'yank' | 'update', Partial<Record<ReleaseStatus, string>>> = {
  publish: {
    published: 'The release is already published',
    yanked: 'A yanked release cannot be published again; create a new release',
  },
  yank: {
    yanked: 'The release is already yanked',
  },
  update: {
    published: 'A published release is immutable; create a new release',
    yanked: 'A yanked release is immutable',
  },
};

function settle(change: ReleaseChange | YankRelease, move: 'publish' | 'yank' | 'update'): Release {
  if (change.outcome === 'not_found') throw notFound('Release');
  if (change.outcome === 'conflict') {
    const message = TRANSITION_CONFLICT[move][change.release.status] ?? `The release is ${change.release.status}`;
    throw new AppError('conflict', message, {
      details: { releaseId: change.release.id, status: change.release.status },
    });
  }
  return change.release;
}

/** The devices that a change of `release` concerns: its channel's, and those running it. */
async function reevaluate(ctx: OtaContext, release: Release, reason: 'publish' | 'yank'): Promise<void> {
  const ids = await ctx.repos.deviceBindings.idsToEvaluate(release.applicationId, release.channel, release.id);
  await ctx.ota.evaluateIds(ids, reason);
}

/** draft → published, then the channel's devices are evaluated (update jobs issued). 409 otherwise. */
export async function publishRelease(ctx: OtaContext, app: Application, releaseId: string): Promise<Release> {
  const release = settle(await ctx.repos.releases.publish(app.id, releaseId, isoNow(ctx.clock)), 'publish');
  await reevaluate(ctx, release, 'publish');
  return release;
}

/**
 * published → yanked, then the devices converge to the previous published release. A draft can
 * be yanked too, which withdraws it before anyone got it and frees its artifact for deletion
 * (docs/ota.md: "yank the release first"). 409 for a release already yanked. Its unfinished
 * rollout ends `aborted` with it, in its transaction (`aborted`; `by` is in its history).
 */
export async function yankRelease(
  ctx: OtaContext,
  app: Application,
  releaseId: string,
  by: string,
): Promise<{ release: Release; aborted: Rollout | null }> {
  const yanked = await ctx.repos.rollouts.yank({ applicationId: app.id, releaseId, at: isoNow(ctx.clock), by });
  const release = settle(yanked, 'yank');
  await reevaluate(ctx, release, 'yank');
  return { release, aborted: yanked.outcome === 'applied' ? yanked.aborted : null };
}

/** Changes a draft; 409 for a published or yanked release. `changed` names the fields that differ. */
export async function updateDraft(
  ctx: OtaContext,
  app: Application,
  releaseId: string,
  patch: DraftPatch,
): Promise<{ release: Release; changed: string[] }> {
  const before = await findRelease(ctx, app, releaseId);
  const release = settle(await ctx.repos.releases.updateDraft(app.id, releaseId, patch), 'update');
  const changed = (['version', 'channel', 'updatePolicy', 'notes'] as const).filter((k) => before[k] !== release[k]);
  return { release, changed };
}
