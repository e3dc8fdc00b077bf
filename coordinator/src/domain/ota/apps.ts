import type { Application, ApplicationPatch } from '../model/applications.js';
import { AppError, notFound } from '../../errors.js';
import { isoNow } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import type { OtaContext } from './context.js';
import { DEFAULT_CHANNEL } from './inputs.js';

/** Applications (docs/ota.md). Bodies are checked by the route schemas. */

export interface CreateAppInput {
  slug: string;
  updateWorkflowName: string;
  defaultChannel?: string | undefined;
}

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
    maintenanceWindow: null,
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
 * Changes the given fields; `changed` names those whose value differs. A new update workflow
 * re-evaluates the application's bindings (docs/ota.md, "Update jobs").
 */
export async function updateApp(
  ctx: OtaContext,
  orgId: string,
  appId: string,
  patch: ApplicationPatch,
): Promise<{ app: Application; changed: string[] }> {
  const before = await findApp(ctx, orgId, appId);
  const changed = (['updateWorkflowName', 'defaultChannel'] as const).filter(
    (k) => patch[k] !== undefined && patch[k] !== before[k],
  );
  if (changed.length === 0) return { app: before, changed };
  const app = await ctx.repos.applications.update(orgId, appId, patch);
  if (!app) throw notFound('Application');
  if (changed.includes('updateWorkflowName')) {
    // Update jobs not yet taken by their agent are replaced by ones that run the new workflow.
    const bindings = await ctx.repos.deviceBindings.listByApp(app.id);
    await ctx.ota.evaluateIds(
      bindings.map((b) => b.id),
      'workflow',
    );
  }
  return { app, changed };
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
