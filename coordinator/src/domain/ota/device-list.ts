import { matchesSelector, parseSelector, type DeviceState, type ReleaseRef } from '@drover/shared';
import type { Application } from '../model/applications.js';
import type { BindingOrigin, ListedDeviceBinding } from '../model/device-bindings.js';
import { bindingViews } from './devices.js';
import type { OtaContext } from './context.js';
import { desiredState } from './desired-state.js';
import { planDeviceGroup } from './device-group-rule.js';
import { installationRef, type BindingView } from './views.js';
import { byteOrder } from '../../util/byte-order.js';
import { nameSearch } from '../../util/name-search.js';

/**
 * An application's devices a page at a time, what they add up to, and what a device group would
 * do (docs/ota.md, "Devices of an application"): what the application's page reads, where it read
 * every binding (3.6 MB and 150 ms of the coordinator's CPU at 10,000 devices) every two seconds.
 */

/** What the devices list is narrowed to. */
export interface DeviceListFilter {
  channel?: string;
  /** A state the device reported, or `none`: it never reported one. */
  state?: DeviceState | 'none';
  /** Text the agent's name or hostname holds, in any case. */
  text?: string;
  /** Only the devices of these agents. */
  agentIds?: readonly string[];
  /** The page's cursor: devices bound after the one of this list key. */
  after?: number;
  /** At most this many; none: every one that matches. */
  limit?: number;
}

export interface DeviceListPage {
  /** The page's devices, in bind order. */
  devices: BindingView[];
  /** How many devices match the filter, on every page. */
  matching: number;
  /** The list key of the page's last device when more match after it, else null. */
  next: number | null;
}

/**
 * A page of the application's devices that match the filter, in bind order. A page of every device
 * is read by its key; narrowed, the bindings are read whole and narrowed here (the agents too when
 * a text is asked for). Only the page's devices are made views (their desired release worked out).
 */
export async function listDevices(
  ctx: OtaContext,
  app: Application,
  filter: DeviceListFilter,
): Promise<DeviceListPage> {
  const { after, limit } = filter;
  const narrowed = filter.channel !== undefined || filter.state !== undefined || filter.text || filter.agentIds;
  if (!narrowed && limit !== undefined) {
    // A page of every device (what the page refreshes): read by its key, not among every binding.
    const repo = ctx.repos.deviceBindings;
    const [page, matching] = await Promise.all([
      repo.pageByApp(app.id, after ?? 0, limit + 1),
      repo.countByApp(app.id),
    ]);
    const more = page.length > limit;
    const shown = more ? page.slice(0, limit) : page;
    return {
      devices: await bindingViews(ctx, app, shown),
      matching,
      next: more ? shown[shown.length - 1]!.listKey : null,
    };
  }
  const byName = nameSearch(filter.text);
  let named: Set<string> | null = null;
  if (byName) {
    const agents = await ctx.repos.agents.listByOrg(app.orgId);
    named = new Set(agents.filter((a) => byName(a.name, a.hostname)).map((a) => a.id));
  }
  const agentIds = filter.agentIds && new Set(filter.agentIds);
  const matches = (b: ListedDeviceBinding) =>
    (filter.channel === undefined || b.channel === filter.channel) &&
    (filter.state === undefined || b.state === (filter.state === 'none' ? null : filter.state)) &&
    (!agentIds || agentIds.has(b.agentId)) &&
    (!named || named.has(b.agentId));
  const all = (await ctx.repos.deviceBindings.listByApp(app.id)).filter(matches);
  const rest = after === undefined ? all : all.filter((b) => b.listKey > after);
  const page = limit === undefined ? rest : rest.slice(0, limit);
  const next = limit !== undefined && rest.length > limit ? page[page.length - 1]!.listKey : null;
  return { devices: await bindingViews(ctx, app, page), matching: all.length, next };
}

/** Devices alike in what the release counts, the publish and yank previews and the device group's removal read, and how many. */
export interface DeviceCount {
  channel: string;
  /** How they were bound: by hand (`manual`) or by the device group (`selector`). */
  origin: BindingOrigin;
  current: ReleaseRef | null;
  /** The release the device should run, or null. */
  desiredReleaseId: string | null;
  /** An update job is under way (not ended). */
  updating: boolean;
  state: DeviceState | null;
  devices: number;
}

/**
 * The application's devices counted by channel, current and desired release, update under way and
 * state: a few rows where the devices are thousands, enough for the release counts and the impact of
 * a publish or a yank (the dashboard works them out as it did from every device).
 */
export async function deviceCounts(ctx: OtaContext, app: Application): Promise<DeviceCount[]> {
  const bindings = await ctx.repos.deviceBindings.listByApp(app.id);
  if (bindings.length === 0) return [];
  const releases = await ctx.repos.releases.list(app.id);
  const withheld = await ctx.repos.rollouts.withheld(bindings.map((b) => b.id));
  const counts = new Map<string, DeviceCount>();
  for (const b of bindings) {
    const { desired } = desiredState({
      channel: b.channel,
      releases,
      current: b.current,
      withheld: withheld.get(b.id) ?? new Set(),
    });
    const current = installationRef(b.current);
    const count: DeviceCount = {
      channel: b.channel,
      origin: b.origin,
      current,
      desiredReleaseId: desired?.id ?? null,
      updating: b.activeJobId !== null,
      state: b.state,
      devices: 1,
    };
    const key = JSON.stringify([
      count.channel,
      count.origin,
      current?.releaseId,
      current?.version,
      current?.sequence,
      count.desiredReleaseId,
      count.updating,
      count.state,
    ]);
    const same = counts.get(key);
    if (same) same.devices += 1;
    else counts.set(key, count);
  }
  return [...counts.values()];
}

/** The most agent names a device group preview gives. */
export const PREVIEW_NAMES = 10;

export interface DeviceGroupPreview {
  /** Agents the selector matches now, revoked ones aside. */
  matching: number;
  /** The first PREVIEW_NAMES of their names, in byte order. */
  names: string[];
  /** Agents applying it would bind (matching, not bound yet). */
  toBind: number;
  /** Bindings the device group made that applying it would remove (their agent no longer matches). */
  toRemove: number;
}

/** What setting `selector` (canonical) as the application's device group would do now, by the rule that applies it. */
export async function previewDeviceGroup(
  ctx: OtaContext,
  app: Application,
  selector: string,
): Promise<DeviceGroupPreview> {
  const agents = await ctx.repos.agents.listByOrg(app.orgId);
  const bindings = await ctx.repos.deviceBindings.listByApp(app.id);
  const plan = planDeviceGroup({ selector, agents, bindings });
  const requirements = parseSelector(selector);
  const names = agents
    .filter((a) => a.status !== 'revoked' && matchesSelector(requirements, a.labels))
    .map((a) => a.name)
    .sort(byteOrder)
    .slice(0, PREVIEW_NAMES);
  return { matching: plan.matching, names, toBind: plan.bind.length, toRemove: plan.unbind.length };
}
