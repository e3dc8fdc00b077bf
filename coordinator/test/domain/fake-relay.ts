import type { ClusterEvent, ClusterListener, ClusterRelay } from '../../src/domain/model/cluster-relay.js';

/** A cluster relay in memory: what the coordinator under test publishes, and a hand to deliver the others' events. */
export class FakeRelay implements ClusterRelay {
  readonly published: ClusterEvent[] = [];
  private readonly listeners = new Set<ClusterListener>();

  publish(event: ClusterEvent): void {
    this.published.push(event);
  }

  subscribe(listener: ClusterListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** An event from another coordinator. */
  deliver(event: ClusterEvent): void {
    for (const listener of this.listeners) listener.event(event);
  }

  gap(): void {
    for (const listener of this.listeners) listener.gap();
  }
}
