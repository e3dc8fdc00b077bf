import { releaseKeyProblem, rotationProblem, sameKeys, sortedKeys, type ReleaseKeyRotation } from '@drover/shared';
import type { Application, ApplicationPatch } from '../model/applications.js';
import { AppError, invalid, notFound, validationFailed } from '../../errors.js';
import { isoNow } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import type { OtaContext } from './context.js';
import { deviceSelectorFrom } from './device-group-rule.js';
import type { DeviceGroupCounts, DeviceGroupService } from './device-groups.js';
import { DEFAULT_CHANNEL } from './inputs.js';
import { checkMaintenanceWindow, sameWindow, type MaintenanceWindowInput } from './maintenance-window.js';

/** Applications (docs/ota.md). Bodies are checked by the route schemas. */

export interface CreateAppInput {
  slug: string;
  updateWorkflowName: string;
  defaultChannel?: string | undefined;
  /** Ed25519 public keys that must sign every release (docs/ota.md, "Release keys"). */
  releaseKeys?: string[] | undefined;
}

/** The key set as stored (sorted, without repeats), or a 422 naming each key that is not usable. */
function checkedReleaseKeys(keys: readonly string[], path: string): string[] {
  const problems = keys.flatMap((key, i) => {
    const problem = releaseKeyProblem(key);
    return problem ? [{ path: `${path}.${i}`, message: problem }] : [];
  });
  if (problems.length > 0) throw validationFailed(problems);
  return sortedKeys(keys);
}

/** The generation of an application's key set: that of its last rotation, 0 before any. */
export const releaseKeyGeneration = (app: Pick<Application, 'releaseKeyRotations'>): number =>
  app.releaseKeyRotations.at(-1)?.generation ?? 0;

export const APP_DELETED_MESSAGE = 'cancelled: the application was deleted';

/** An application of the organization (not deleted), or 404. */
export async function findApp(ctx: OtaContext, orgId: string, appId: string): Promise<Application> {
  const app = await ctx.repos.applications.findInOrg(orgId, appId);
  if (!app) throw notFound('Application');
  return app;
}

/** 409 when the slug is taken within the organization. */
export async function createApp(ctx: OtaContext, orgId: string, input: CreateAppInput): Promise<Application> {
  const app: Application = {
    id: newId(),
    orgId,
    slug: input.slug,
    updateWorkflowName: input.updateWorkflowName,
    defaultChannel: input.defaultChannel ?? DEFAULT_CHANNEL,
    notify: null,
    deviceSelector: null,
    maintenanceWindow: null,
    releaseKeys: input.releaseKeys ? checkedReleaseKeys(input.releaseKeys, 'body.releaseKeys') : null,
    releaseKeyRotations: [],
    createdAt: isoNow(ctx.clock),
    deletedAt: null,
  };
  if ((await ctx.repos.applications.insert(app)) === 'duplicate_slug') {
    throw new AppError('conflict', `An application with the slug \`${input.slug}\` already exists`, {
      details: { slug: input.slug },
    });
  }
  return app;
}

/**
 * A change of an application, as the PATCH body gives it (checked by the route schema): fields to
 * change, its maintenance window, and its device group's selector.
 */
export interface AppChange extends Omit<ApplicationPatch, 'maintenanceWindow' | 'releaseKeys'> {
  maintenanceWindow?: MaintenanceWindowInput | null | undefined;
  /** A label selector, or null to remove the device group (docs/ota.md, "Device groups"). */
  deviceSelector?: string | null | undefined;
  /** The first release keys of an application that has none. */
  releaseKeys?: string[] | undefined;
  /** A new key set, signed by a key of the current one (`drover release rotate-keys`). */
  releaseKeyRotation?: ReleaseKeyRotation | undefined;
}

/**
 * The release keys a change sets, or undefined: the first set (`releaseKeys`) only on an
 * application without keys (409 otherwise: a set changes only through a rotation, so that devices
 * that pinned it can follow); a rotation only on an application with keys, valid (422 naming why).
 * The same set again is no change.
 */
function releaseKeysChange(before: Application, change: AppChange): ApplicationPatch['releaseKeys'] {
  if (change.releaseKeys !== undefined && change.releaseKeyRotation !== undefined) {
    throw invalid('body.releaseKeyRotation', 'send either releaseKeys (the first set) or releaseKeyRotation, not both');
  }
  if (change.releaseKeys !== undefined) {
    const keys = checkedReleaseKeys(change.releaseKeys, 'body.releaseKeys');
    if (before.releaseKeys === null) return { keys, rotations: [], from: null };
    if (sameKeys(keys, before.releaseKeys)) return undefined;
    throw new AppError(
      'conflict',
      `The application ${before.slug} already has release keys: devices pinned them, so they change only through a rotation signed by one of them (releaseKeyRotation, made with \`drover release rotate-keys\`)`,
      { details: { releaseKeys: before.releaseKeys } },
    );
  }
  const rotation = change.releaseKeyRotation;
  if (rotation === undefined) return undefined;
  if (before.releaseKeys === null) {
    throw invalid(
      'body.releaseKeyRotation',
      `the application ${before.slug} has no release keys to rotate: set releaseKeys`,
    );
  }
  const problem = rotationProblem(rotation, before.slug, before.releaseKeys, releaseKeyGeneration(before));
  if (problem) throw invalid('body.releaseKeyRotation', problem);
  const stored: ReleaseKeyRotation = { ...rotation, keys: sortedKeys(rotation.keys) };
  return { keys: stored.keys, rotations: [...before.releaseKeyRotations, stored], from: before.releaseKeys };
}

/**
 * Changes the given fields; `changed` names those whose value differs. A new update workflow
 * re-evaluates the application's bindings (docs/ota.md, "Update jobs"), and so does a new or
 * removed maintenance window ("Maintenance windows"). A window is checked first: 422 naming the
 * field (`body.maintenanceWindow.cron`, `.timezone`, `.durationMinutes`). A `deviceSelector`
 * (even the one it has) is applied to every agent of the organization after the other fields
 * changed (new bindings take the default channel): `deviceGroup` says what it matches and did;
 * null when none was sent.
 */
export async function updateApp(
  ctx: OtaContext & { deviceGroups: DeviceGroupService },
  caller: { orgId: string; userId: string },
  appId: string,
  change: AppChange,
): Promise<{ app: Application; changed: string[]; before: Application; deviceGroup: DeviceGroupCounts | null }> {
  const { deviceSelector: sent } = change;
  const selector = sent === undefined ? undefined : deviceSelectorFrom(sent, 'body.deviceSelector');
  const patch: ApplicationPatch = {
    updateWorkflowName: change.updateWorkflowName,
    defaultChannel: change.defaultChannel,
    notify: change.notify,
  };
  if (change.maintenanceWindow === null) patch.maintenanceWindow = null;
  else if (change.maintenanceWindow !== undefined) {
    const check = checkMaintenanceWindow(change.maintenanceWindow, 'body.maintenanceWindow');
    if (!check.ok) throw validationFailed(check.problems);
    patch.maintenanceWindow = check.window;
  }
  const before = await findApp(ctx, caller.orgId, appId);
  patch.releaseKeys = releaseKeysChange(before, change);
  const changed: string[] = (['updateWorkflowName', 'defaultChannel', 'notify'] as const).filter(
    (k) => patch[k] !== undefined && JSON.stringify(patch[k]) !== JSON.stringify(before[k]),
  );
  if (patch.releaseKeys !== undefined) changed.push('releaseKeys');
  if (patch.maintenanceWindow !== undefined && !sameWindow(patch.maintenanceWindow, before.maintenanceWindow)) {
    changed.push('maintenanceWindow');
  }
  let app = before;
  if (changed.length > 0) {
    const updated = await ctx.repos.applications.update(caller.orgId, appId, patch);
    if (!updated) throw notFound('Application');
    // The keys another change set meanwhile, even the same ones: nothing of this change was written.
    if (updated.outcome === 'keys_changed') {
      throw new AppError(
        'conflict',
        `The release keys of ${before.slug} changed while this change was checked; nothing was changed: read the application and try again`,
        { details: { releaseKeys: updated.app.releaseKeys } },
      );
    }
    app = updated.app;
  }
  const reason = changed.includes('updateWorkflowName')
    ? 'workflow'
    : changed.includes('maintenanceWindow')
      ? 'window'
      : null;
  if (reason) {
    // A new workflow: update jobs not yet taken by their agent are replaced by ones that run it.
    // A new window: held updates start if it is open, pending ones wait if it is closed.
    const bindings = await ctx.repos.deviceBindings.listByApp(app.id);
    await ctx.ota.evaluateIds(
      bindings.map((b) => b.id),
      reason,
    );
  }
  if (selector === undefined) return { app, changed, before, deviceGroup: null };
  const applied = await ctx.deviceGroups.setSelector(app, selector, { actorType: 'user', actorId: caller.userId });
  if (!applied) throw notFound('Application');
  return {
    app: applied.app,
    changed: selector === before.deviceSelector ? changed : [...changed, 'deviceSelector'],
    before,
    deviceGroup: applied.counts,
  };
}

/**
 * Deletes the application, its releases (their artifact files can then be deleted) and its
 * device bindings; update jobs not yet taken by their agent are cancelled.
 */
export async function deleteApp(ctx: OtaContext, orgId: string, appId: string): Promise<Application> {
  const deleted = await ctx.repos.applications.delete(orgId, appId, isoNow(ctx.clock), APP_DELETED_MESSAGE);
  if (!deleted) throw notFound('Application');
  for (const jobId of deleted.cancelledJobIds) ctx.jobEvents.jobFinished(jobId);
  return deleted.app;
}
