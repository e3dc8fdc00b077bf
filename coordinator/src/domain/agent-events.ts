import type { Agent } from './model/agents.js';

export type AgentRevokedListener = (agent: Agent) => void;

/**
 * In-process notifications about agents, so that the parts holding live resources for an agent
 * (its event stream) can react to management changes without the routes knowing about them.
 * Today: revocation. The stream subscribes with `onRevoked` and closes the agent's connection.
 */
export class AgentEvents {
  private readonly revokedListeners = new Set<AgentRevokedListener>();

  /** Subscribes; returns the function that unsubscribes. */
  onRevoked(listener: AgentRevokedListener): () => void {
    this.revokedListeners.add(listener);
    return () => this.revokedListeners.delete(listener);
  }

  /**
   * Tells every listener that the agent was revoked. A listener that throws does not stop the
   * others nor the revocation (already committed); its errors are returned for logging.
   */
  revoked(agent: Agent): unknown[] {
    const errors: unknown[] = [];
    for (const listener of this.revokedListeners) {
      try {
        listener(agent);
      } catch (error) {
        errors.push(error);
      }
    }
    return errors;
  }
}

const perCoordinator = new WeakMap<object, AgentEvents>();

/**
 * The AgentEvents of one coordinator, keyed by its context object (`app.ctx`), so that several
 * coordinators in one process (tests) never see each other's events.
 */
export function agentEventsOf(ctx: object): AgentEvents {
  let events = perCoordinator.get(ctx);
  if (!events) {
    events = new AgentEvents();
    perCoordinator.set(ctx, events);
  }
  return events;
}
