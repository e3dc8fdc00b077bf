import type { Application } from '../model/applications.js';
import type { DeviceBinding, EvaluationOutcome } from '../model/device-bindings.js';
import { AppError, notFound, validationFailed, type ValidationDetail } from '../../errors.js';
import { isoAt, isoNow } from '../../util/clock.js';
import { newTimeOrderedId } from '../../util/ids.js';
import type { OtaContext } from './context.js';
import { desiredState } from './desired-state.js';
import { inDeviceGroup } from './device-group-rule.js';
import { toBindingView, type BindingView } from './views.js';

/**
 * Device bindings (docs/ota.md): bind agents to an application, change a
 * binding's channel, remove it, reconcile it. Each change re-evaluates the binding at once.
 */

export const UNBOUND_MESSAGE = 'cancelled: the device binding was removed';

/** Bindings as the dashboard shows them, the desired state computed from the application's releases. */
export async function bindingViews(
  ctx: OtaContext,
  app: Application,
  bindings: readonly DeviceBinding[],
): Promise<BindingView[]> {
  if (bindings.length === 0) return [];
  const releases = await ctx.repos.releases.list(app.id);
  const withheld = await ctx.repos.rollouts.withheld(bindings.map((b) => b.id));
  return bindings.map((b) =>
    toBindingView(
      b,
      desiredState({ channel: b.channel, releases, current: b.current, withheld: withheld.get(b.id) ?? new Set() }),
    ),
  );
}

function viewOf(outcome: EvaluationOutcome | undefined): BindingView {
  if (!outcome?.binding || !outcome.state) throw notFound('Device');
  return toBindingView(outcome.binding, outcome.state);
}

export async function findBinding(ctx: OtaContext, app: Application, deviceId: string): Promise<DeviceBinding> {
  const binding = await ctx.repos.deviceBindings.findInApp(app.id, deviceId);
  if (!binding) throw notFound('Device');
  return binding;
}

/**
 * Binds agents of the organization (not revoked) on `channel` (default: the application's),
 * all or none: 422 naming each unusable agent, 409 when one is already bound. Each new binding
 * is evaluated at once (an update job is issued when a release is published on its channel).
 */
export async function bindDevices(
  ctx: OtaContext,
  app: Application,
  agentIds: readonly string[],
  channel: string | undefined,
): Promise<BindingView[]> {
  const ids = agentIds.map((id) => id.toLowerCase());
  const agents = new Map((await ctx.repos.agents.listByIds(app.orgId, ids)).map((a) => [a.id, a]));
  const problems: ValidationDetail[] = [];
  ids.forEach((id, i) => {
    const agent = agents.get(id);
    if (ids.indexOf(id) !== i) problems.push({ path: `body.agentIds.${i}`, message: `\`${id}\` is listed twice` });
    else if (!agent) problems.push({ path: `body.agentIds.${i}`, message: `no agent \`${id}\` in the organization` });
    else if (agent.status === 'revoked') {
      problems.push({ path: `body.agentIds.${i}`, message: `the agent \`${id}\` is revoked` });
    }
  });
  if (problems.length > 0) throw validationFailed(problems);
  const now = ctx.clock.now();
  const result = await ctx.repos.deviceBindings.bind({
    orgId: app.orgId,
    applicationId: app.id,
    bindings: ids.map((agentId) => ({ id: newTimeOrderedId(now), agentId })),
    channel: channel ?? app.defaultChannel,
    at: isoAt(now),
  });
  if (result.outcome === 'not_found') throw notFound('Application');
  if (result.outcome === 'already_bound') {
    throw new AppError('conflict', `Already bound to this application: ${result.agentIds.join(', ')}`, {
      details: { agentIds: result.agentIds },
    });
  }
  const outcomes = await ctx.ota.evaluateIds(
    result.bindings.map((b) => b.id),
    'bind',
  );
  return outcomes.map(viewOf);
}

/** Moves the binding to another channel and re-evaluates it (a pending update job may be replaced). */
export async function changeChannel(
  ctx: OtaContext,
  app: Application,
  deviceId: string,
  channel: string,
): Promise<{ view: BindingView; from: string }> {
  const before = await findBinding(ctx, app, deviceId);
  if (before.channel !== channel) await ctx.repos.deviceBindings.changeChannel(app.id, deviceId, channel);
  const [outcome] = await ctx.ota.evaluateIds([deviceId], before.channel === channel ? 'sweep' : 'channel');
  return { view: viewOf(outcome), from: before.channel };
}

/**
 * Removes the binding; its update job is cancelled if the agent has not taken it yet. 409 while
 * the agent belongs to the application's device group (its selector matches it, and it is not
 * revoked): the selector would bind it again (docs/ota.md, "Device groups").
 */
export async function unbindDevice(ctx: OtaContext, app: Application, deviceId: string): Promise<DeviceBinding> {
  if (app.deviceSelector !== null) {
    const binding = await findBinding(ctx, app, deviceId);
    const agent = await ctx.repos.agents.findInOrg(app.orgId, binding.agentId);
    if (agent && agent.status !== 'revoked' && inDeviceGroup(app, agent.labels)) {
      throw new AppError(
        'conflict',
        `The agent matches the application's device selector \`${app.deviceSelector}\`: it stays bound while it does; change its labels or the selector`,
        { details: { deviceSelector: app.deviceSelector, origin: binding.origin } },
      );
    }
  }
  const removed = await ctx.repos.deviceBindings.unbind(app.id, deviceId, isoNow(ctx.clock), UNBOUND_MESSAGE);
  if (!removed) throw notFound('Device');
  if (removed.cancelledJobId) ctx.jobEvents.jobFinished(removed.cancelledJobId);
  return removed.binding;
}

/**
 * Manual re-evaluation: failures count from zero, a postponement is lifted, and an update job
 * is issued if needed (a pending one is sent to the agent again).
 */
export async function reconcileDevice(ctx: OtaContext, app: Application, deviceId: string): Promise<BindingView> {
  await findBinding(ctx, app, deviceId);
  const [outcome] = await ctx.ota.evaluateIds([deviceId], 'reconcile');
  return viewOf(outcome);
}
