import { isoNow, type Clock } from '../../util/clock.js';
import type { AuditLog, AuditRecord } from '../audit/audit-log.js';
import type { JobEvents } from '../jobs/job-events.js';
import type { Application } from '../model/applications.js';
import type { DeviceGroupChange, DeviceGroupPassInput, DeviceGroupRepository } from '../model/device-groups.js';
import { UNBOUND_MESSAGE } from './devices.js';
import type { OtaEngine } from './engine.js';

/**
 * Device groups (docs/ota.md, "Device groups"): an application's label selector binds every agent
 * it matches (not revoked) to the application, on its default channel, as soon as it matches, and
 * removes the bindings it made once their agent stops matching. Bindings made by `agentIds`
 * (`manual`) are never removed by it, and an agent bound so is not bound again. Every change goes
 * through DeviceGroupService: the application's PATCH, enrollments, the labels an agent reports and
 * those operators set.
 */

/** Who caused a pass: the audit log's actor of the bindings it makes and removes. */
export interface DeviceGroupActor {
  actorType: 'user' | 'agent';
  actorId: string;
}

/** What setting a selector did: the agents it matches now (revoked ones aside) and the bindings it added and removed. */
export interface DeviceGroupCounts {
  matching: number;
  bound: number;
  unbound: number;
}

export interface DeviceGroupDeps {
  repos: { deviceGroups: DeviceGroupRepository };
  audit: AuditLog;
  clock: Clock;
  jobEvents: JobEvents;
  ota: OtaEngine;
}

/**
 * Applies device groups (`ctx.deviceGroups`). New bindings are evaluated at once, as bindings made
 * by `agentIds` are (an update job when their channel has a published release); a removed
 * binding's pending update job is cancelled. Each binding made or removed is audited
 * (`device.bind`, `device.unbind`, with `origin: selector`).
 */
export class DeviceGroupService {
  constructor(private readonly deps: DeviceGroupDeps) {}

  /**
   * Stores the application's selector (canonical, or null) and applies it to every agent of the
   * organization. Null when the application is gone.
   */
  async setSelector(
    app: Application,
    selector: string | null,
    actor: DeviceGroupActor,
  ): Promise<{ app: Application; counts: DeviceGroupCounts } | null> {
    const [change] = await this.pass({ orgId: app.orgId, applicationId: app.id, setSelector: { selector } }, actor);
    if (!change) return null;
    return {
      app: change.application,
      counts: { matching: change.matching, bound: change.bound.length, unbound: change.unbound.length },
    };
  }

  /**
   * Agents whose labels changed, or that enrolled: each application of the organization with a
   * selector binds those it now matches and unbinds those it no longer does.
   */
  async agentsChanged(orgId: string, agentIds: readonly string[], actor: DeviceGroupActor): Promise<void> {
    if (agentIds.length > 0) await this.pass({ orgId, agentIds }, actor);
  }

  private async pass(
    input: Omit<DeviceGroupPassInput, 'at' | 'cancelMessage'>,
    actor: DeviceGroupActor,
  ): Promise<DeviceGroupChange[]> {
    const { repos, clock, jobEvents, ota, audit } = this.deps;
    const changes = await repos.deviceGroups.pass({
      ...input,
      at: isoNow(clock),
      // A pending update job of a binding removed is cancelled as `DELETE .../devices/:deviceId` cancels it.
      cancelMessage: UNBOUND_MESSAGE,
    });
    for (const change of changes) {
      for (const { cancelledJobId } of change.unbound) if (cancelledJobId) jobEvents.jobFinished(cancelledJobId);
    }
    const bound = changes.flatMap((c) => c.bound.map((b) => b.id));
    if (bound.length > 0) await ota.evaluateIds(bound, 'bind');
    const entries = changes.flatMap(({ application: app, bound, unbound }) => [
      ...bound.map((b): AuditRecord => ({
        orgId: app.orgId,
        ...actor,
        action: 'device.bind',
        targetType: 'device_binding',
        targetId: b.id,
        metadata: {
          applicationId: app.id,
          agentId: b.agentId,
          channel: b.channel,
          origin: 'selector',
          deviceSelector: app.deviceSelector,
        },
      })),
      ...unbound.map(({ binding: b, cancelledJobId }): AuditRecord => ({
        orgId: app.orgId,
        ...actor,
        action: 'device.unbind',
        targetType: 'device_binding',
        targetId: b.id,
        metadata: {
          applicationId: app.id,
          agentId: b.agentId,
          origin: 'selector',
          deviceSelector: app.deviceSelector,
          cancelledJobId,
        },
      })),
    ]);
    await Promise.all(entries.map((entry) => audit.record(entry)));
    return changes;
  }
}
