import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { ClusterEvent, ClusterListener, ClusterRelay } from '../../domain/model/cluster-relay.js';
import { withTimeout } from '../../util/with-timeout.js';
import { decodePayload, encodeEvent, GAP_REQUEST, MAX_PAYLOAD_BYTES, payloadOf } from './cluster-payload.js';
import { CONNECTION_TIMEOUT_MS } from './pool.js';

/** How long closing waits for the queue to go out, then for the connection to end. */
const CLOSE_WAIT_MS = 2_000;

/** The channel every coordinator of a database listens on. */
export const CLUSTER_CHANNEL = 'drover_events';

export interface NotifyRelayOptions {
  url: string;
  logger: {
    info(obj: object, msg: string): void;
    warn(obj: object, msg: string): void;
    error(obj: object, msg: string): void;
  };
  /** The first reconnect delay's upper bound (full jitter, doubling up to `reconnectCapMs`). */
  reconnectBaseMs?: number;
  reconnectCapMs?: number;
  /** Events kept while the connection is down; beyond that the oldest are dropped, and the others told of a gap. */
  maxQueued?: number;
  /**
   * How often the connection is checked with a round trip (10 s): one that has not answered by
   * the next check is taken for lost. A connection can stall without breaking (a NAT or a proxy
   * that forgot it, a frozen peer), and then neither TCP keepalive (minutes) nor an error tells.
   */
  heartbeatMs?: number;
  /**
   * How long opening the connection may take (the pool's 5 s): a server, proxy or NAT that takes
   * the TCP connection and never answers would otherwise hold the reconnect for good.
   */
  connectTimeoutMs?: number;
}

/**
 * The cluster relay on PostgreSQL (docs/architecture.md, "Several coordinators"): one dedicated
 * connection per coordinator, outside the pool, that LISTENs on `drover_events` and sends this
 * coordinator's events with `pg_notify`.
 *
 * - Sending: events published in one turn of the event loop, and those published while a send is
 *   in flight, go out together in one notification (up to MAX_PAYLOAD_BYTES each), in order, on
 *   this one connection: a lone event leaves at once, a burst (an OTA publish to thousands of
 *   devices) in a few statements. Payloads carry ids only.
 * - Receiving: notifications of the other coordinators (a payload names its sender; this
 *   coordinator's own are skipped) are handed to the listeners.
 * - The connection is kept alive (TCP keepalive), checked with a round trip every `heartbeatMs`
 *   (one that stalls is dropped) and, when it drops, opened again after a jittered backoff; events published meanwhile wait (at most `maxQueued`) and go out once it is back.
 *   Whatever the others sent while it was down is lost: the listeners are told of the gap and
 *   read the database again.
 */
export class PostgresNotifyRelay implements ClusterRelay {
  /** This coordinator's id in the payloads: random per process. */
  readonly sender = randomBytes(8).toString('hex');
  private readonly listeners = new Set<ClusterListener>();
  private client: pg.Client | null = null;
  private queue: string[] = [];
  /** Events were dropped: the next notification asks the others to read again. */
  private dropped = false;
  private scheduled = false;
  private flushing: Promise<void> | null = null;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private closed = false;
  private readonly baseMs: number;
  private readonly capMs: number;
  private readonly maxQueued: number;
  private readonly heartbeatMs: number;
  private heartbeat: NodeJS.Timeout | undefined;
  /** The connection whose round trip is awaited (the last check's), else null. */
  private probing: pg.Client | null = null;

  constructor(private readonly options: NotifyRelayOptions) {
    this.baseMs = options.reconnectBaseMs ?? 100;
    this.capMs = options.reconnectCapMs ?? 5_000;
    this.maxQueued = options.maxQueued ?? 100_000;
    this.heartbeatMs = options.heartbeatMs ?? 10_000;
  }

  /** Opens the connection and listens; rejects when the database cannot be reached. */
  async start(): Promise<void> {
    this.client = await this.open();
    this.heartbeat = setInterval(() => this.check(), this.heartbeatMs);
    this.heartbeat.unref();
  }

  /** Whether the connection is up (tests, status). */
  get connected(): boolean {
    return this.client !== null;
  }

  publish(event: ClusterEvent): void {
    if (this.closed) return;
    const encoded = encodeEvent(event);
    if (encoded === null) {
      this.options.logger.error({ event }, 'cluster events: an event with an id that cannot travel was not sent');
      return;
    }
    this.queue.push(encoded);
    if (this.queue.length > this.maxQueued) {
      this.queue.splice(0, this.queue.length - this.maxQueued);
      if (!this.dropped) this.options.logger.warn({ kept: this.maxQueued }, 'cluster events: queue full; dropping');
      this.dropped = true;
    }
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        this.kick();
      });
    }
  }

  subscribe(listener: ClusterListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Sends what is queued (while connected), stops reconnecting and closes the connection; on a
   * connection that stalled, gives up each of the two after CLOSE_WAIT_MS.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.kick();
    await withTimeout(this.drained(), CLOSE_WAIT_MS).catch(() => undefined);
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.heartbeat);
    const client = this.client;
    this.client = null;
    this.listeners.clear();
    if (client) {
      await withTimeout(client.end(), CLOSE_WAIT_MS).catch(() => undefined);
      destroyConnection(client);
    }
  }

  private async drained(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /** Breaks the connection as a network failure would (tests). */
  breakConnection(): void {
    if (this.client) destroyConnection(this.client);
  }

  /**
   * A round trip on the connection; the previous one still unanswered means it stalled: it is
   * dropped, and reconnecting tells the listeners of the gap (what the others sent meanwhile is
   * lost).
   */
  private check(): void {
    const client = this.client;
    if (!client || this.closed) return;
    if (this.probing === client) {
      this.probing = null;
      this.options.logger.warn(
        { waitedMs: this.heartbeatMs },
        'cluster events: the connection stopped answering; reconnecting',
      );
      destroyConnection(client);
      return;
    }
    this.probing = client;
    client.query('SELECT 1').then(
      () => {
        if (this.probing === client) this.probing = null;
      },
      () => undefined, // a connection that failed is handled as lost
    );
  }

  private async open(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.options.url,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: this.options.connectTimeoutMs ?? CONNECTION_TIMEOUT_MS,
      application_name: 'drover-coordinator-events',
    });
    client.on('notification', (message) => {
      if (message.channel === CLUSTER_CHANNEL && message.payload) this.received(message.payload);
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${CLUSTER_CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    return client;
  }

  private received(payload: string): void {
    const decoded = decodePayload(payload);
    if (!decoded || decoded.sender === this.sender) return;
    for (const listener of this.listeners) {
      try {
        if (decoded.gap) listener.gap();
        for (const event of decoded.events) listener.event(event);
      } catch (error) {
        this.options.logger.error({ err: error }, 'cluster events: a listener failed');
      }
    }
  }

  /** The connection failed or ended: open a new one unless closing. */
  private lost(client: pg.Client, error?: Error): void {
    if (this.client !== client) return;
    this.client = null;
    void client.end().catch(() => undefined);
    if (this.closed) return;
    this.options.logger.warn({ err: error }, 'cluster events: connection lost; reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, 20));
    this.attempt += 1;
    this.reconnectTimer = setTimeout(() => void this.reconnect(), Math.floor(Math.random() * ceiling));
    this.reconnectTimer.unref();
  }

  private async reconnect(): Promise<void> {
    if (this.closed) return;
    let client: pg.Client;
    try {
      client = await this.open();
    } catch (error) {
      if (this.closed) return;
      this.options.logger.warn({ err: error, attempt: this.attempt }, 'cluster events: could not reconnect');
      this.scheduleReconnect();
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.attempt = 0;
    this.options.logger.info({}, 'cluster events: reconnected');
    // What the others sent meanwhile is lost: every listener reads the database again.
    for (const listener of this.listeners) {
      try {
        listener.gap();
      } catch (error) {
        this.options.logger.error({ err: error }, 'cluster events: a listener failed');
      }
    }
    this.kick();
  }

  private kick(): void {
    if (this.flushing || !this.client || this.queue.length === 0) return;
    this.flushing = this.flush().finally(() => {
      this.flushing = null;
      this.kick();
    });
  }

  /** Sends the queue, one notification per MAX_PAYLOAD_BYTES of events, while connected. */
  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const client = this.client;
      if (!client) return;
      const batch: string[] = [];
      if (this.dropped) batch.push(GAP_REQUEST);
      let bytes = this.sender.length + 1;
      while (this.queue.length > 0) {
        const next = this.queue[0]!;
        if (batch.length > 0 && bytes + next.length + 1 > MAX_PAYLOAD_BYTES) break;
        batch.push(this.queue.shift()!);
        bytes += next.length + 1;
      }
      const gapSent = this.dropped;
      this.dropped = false;
      try {
        await client.query('SELECT pg_notify($1, $2)', [CLUSTER_CHANNEL, payloadOf(this.sender, batch)]);
      } catch (error) {
        const events = gapSent ? batch.slice(1) : batch;
        if (error instanceof pg.DatabaseError) {
          // The server refused this notification (it answered with an error): it would again.
          this.options.logger.error({ err: error, events: events.length }, 'cluster events: a notification failed');
          this.dropped = true;
          continue;
        }
        // The connection went down: sent again once it is back (a receiver may see them twice).
        this.queue.unshift(...events);
        this.dropped ||= gapSent;
        this.lost(client, error as Error);
        return;
      }
    }
  }
}

/** Destroys the client's socket: the client then fails as on a network failure ('error', 'end'). */
function destroyConnection(client: pg.Client): void {
  const stream = (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
  stream?.destroy();
}
