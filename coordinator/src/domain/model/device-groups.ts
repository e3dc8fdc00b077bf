import type { AgentStatus } from './agents.js';
import type { Application } from './applications.js';
import type { BindingOrigin, DeviceBinding, RemovedBinding } from './device-bindings.js';

/**
 * Device groups (docs/ota.md, "Device groups"): an application's label selector binds the agents
 * it matches and unbinds those that stop matching. A pass applies it, in one transaction.
 */

/** An agent as a pass reads it. */
export interface GroupAgent {
  id: string;
  status: AgentStatus;
  /** Its labels: the reported ones with the operators' on top. */
  labels: Readonly<Record<string, string>>;
}

/** A binding of the application as a pass reads it. */
export interface GroupBinding {
  id: string;
  agentId: string;
  origin: BindingOrigin;
}

/** What the rule decides on: the application's selector (canonical; null: none), the agents and their bindings. */
export interface DeviceGroupFacts {
  selector: string | null;
  agents: readonly GroupAgent[];
  bindings: readonly GroupBinding[];
}

export interface DeviceGroupPlan {
  /** The agents read that the selector matches, revoked ones aside. */
  matching: number;
  /** Agents to bind (origin `selector`), in the order read. */
  bind: string[];
  /** Bindings to remove (of origin `selector` only). */
  unbind: string[];
}

/** The device group rule (domain/ota/device-groups.ts), run inside the pass's transaction. */
export type PlanDeviceGroup = (facts: DeviceGroupFacts) => DeviceGroupPlan;

export interface DeviceGroupPassInput {
  orgId: string;
  /** One application (a PATCH of it); omitted: every application of the organization that has a selector. */
  applicationId?: string | undefined;
  /** Only these agents (their labels changed, one enrolled); omitted: every agent of the organization. */
  agentIds?: readonly string[] | undefined;
  /** Stores this selector (canonical, or null) on the application first, in the same transaction. */
  setSelector?: { selector: string | null } | undefined;
  at: string;
  /** Why the removed bindings' pending update jobs are cancelled. */
  cancelMessage: string;
}

/** What a pass did to one application. */
export interface DeviceGroupChange {
  /** The application as the pass left it. */
  application: Application;
  /** As DeviceGroupPlan counts it, among the agents the pass read. */
  matching: number;
  /** The bindings it made, on the application's default channel, in the order of the agents read. */
  bound: DeviceBinding[];
  unbound: RemovedBinding[];
}

export interface DeviceGroupRepository {
  /**
   * Applies the device groups of the organization's applications in one transaction: each
   * application's selector binds the agents it matches that are not bound yet (revoked ones
   * aside) and unbinds the selector's bindings whose agent it no longer matches (a pending
   * update job is cancelled with `cancelMessage`). Manual bindings are never removed. Passes of
   * one organization take turns, across coordinators; a binding is made once per agent (the
   * unique application and agent). Deleted applications are left out.
   */
  pass(input: DeviceGroupPassInput): Promise<DeviceGroupChange[]>;
}
