/**
 * What one coordinator tells the others that share its database, so that what each holds in
 * memory (agents' streams, sync trigger calls waiting, the cron index) follows what another one
 * committed. Ids only: the receiver reads the rows it needs from the database.
 */
export type ClusterEvent =
  /** A job was created for the agent: the instance holding its stream sends it. */
  | { type: 'job_created'; agentId: string; jobId: string }
  /**
   * A pending job the agent was sent is to be sent again: its device reported without it (an
   * update job, ota/engine.ts). A coordinator older than this event skips it.
   */
  | { type: 'job_resent'; agentId: string; jobId: string }
  /** A job of the organization waits in a pool for an agent with room (docs/fleets.md, "Pools"). */
  | { type: 'job_pooled'; orgId: string; jobId: string }
  /** A user cancelled a job of the agent: the instance holding its stream tells it. */
  | { type: 'cancel_requested'; agentId: string; jobId: string }
  /** The job reached a terminal status: sync calls waiting on it answer, its queue slot is free. */
  | { type: 'job_finished'; jobId: string }
  /** The agent was revoked: its stream, wherever it is, is closed. */
  | { type: 'agent_revoked'; agentId: string }
  /** The agent's stream opened on the sender: another instance stops counting down to `disconnected`. */
  | { type: 'stream_opened'; agentId: string }
  /** A trigger was created, changed or deleted: every cron scheduler reads it again. */
  | { type: 'trigger_changed'; triggerId: string };

export type ClusterEventType = ClusterEvent['type'];

export interface ClusterListener {
  /** An event another coordinator published (never one this coordinator published). */
  event(event: ClusterEvent): void;
  /**
   * Events of other coordinators may have been missed (the relay's connection dropped and came
   * back, or a sender had to drop some): read again what the events would have said.
   */
  gap(): void;
}

/**
 * The channel between the coordinators on one database (PostgreSQL `LISTEN/NOTIFY`,
 * db/postgres/notify-relay.ts). Absent on SQLite: one coordinator, whose events stay in process.
 */
export interface ClusterRelay {
  /** Sends the event to the other coordinators, soon and in order; never throws. */
  publish(event: ClusterEvent): void;
  /** Returns the function that unsubscribes. */
  subscribe(listener: ClusterListener): () => void;
}
