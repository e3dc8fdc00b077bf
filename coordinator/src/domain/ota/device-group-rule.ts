import { matchesSelector, parseSelector, SelectorError, storableSelector, type Labels } from '@drover/shared';
import { validationFailed } from '../../errors.js';
import type { Application } from '../model/applications.js';
import type { DeviceGroupFacts, DeviceGroupPlan } from '../model/device-groups.js';

/** The rules of device groups (docs/ota.md, "Device groups"); DeviceGroupService (device-groups.ts) applies them. */

/**
 * The rule, run in the pass's transaction: the agents to bind (matching, not revoked, not bound
 * yet, in the order read) and the selector's bindings to remove (their agent no longer matches;
 * a revoked agent that still matches keeps its binding, as revocation keeps bindings). No
 * selector: nothing is bound and every binding the selector made is removed.
 */
export function planDeviceGroup({ selector, agents, bindings }: DeviceGroupFacts): DeviceGroupPlan {
  const requirements = selector === null ? null : parseSelector(selector);
  const matches = (labels: Labels) => requirements !== null && matchesSelector(requirements, labels);
  const bound = new Set(bindings.map((b) => b.agentId));
  const matching = agents.filter((a) => a.status !== 'revoked' && matches(a.labels));
  const labelsOf = new Map(agents.map((a) => [a.id, a.labels]));
  return {
    matching: matching.length,
    bind: matching.filter((a) => !bound.has(a.id)).map((a) => a.id),
    unbind: bindings.filter((b) => b.origin === 'selector' && !matches(labelsOf.get(b.agentId) ?? {})).map((b) => b.id),
  };
}

/** Whether an agent of these labels belongs to the application's device group. */
export const inDeviceGroup = (app: Pick<Application, 'deviceSelector'>, labels: Labels): boolean =>
  app.deviceSelector !== null && matchesSelector(parseSelector(app.deviceSelector), labels);

/**
 * A device selector from a request, canonical (`role=kiosk, site=berlin` is kept
 * `role=kiosk,site=berlin`), or null. 422 at `path` for one that does not parse (naming the
 * position) and for the empty selector, as a trigger's `agentSelector` is refused. `nullRemoves`:
 * the request may send null instead (an application's change), which the refusal then says.
 */
export function deviceSelectorFrom(source: string | null, path: string, nullRemoves = true): string | null {
  if (source === null) return null;
  try {
    const requirements = parseSelector(source);
    if (requirements.length === 0) {
      throw validationFailed([
        {
          path,
          message: `must select by at least one label (to bind every agent, select one they all have, such as \`os\`)${
            nullRemoves ? '; send null to remove the device group' : ''
          }`,
        },
      ]);
    }
    return storableSelector(requirements);
  } catch (error) {
    if (!(error instanceof SelectorError)) throw error;
    throw validationFailed([{ path, message: `is not a label selector: ${error.message}` }]);
  }
}
