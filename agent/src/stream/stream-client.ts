import { EventSource, type FetchLike } from 'eventsource';
import type { Logger } from 'pino';
import { StreamEvent } from '@drover/shared';
import { Backoff } from '../util/backoff.js';
import { formatDuration } from '../exec/durations.js';
import { describeNetworkError } from '../http/client.js';
import { signedFetch, type StreamSigner } from './signed-fetch.js';

export type ConnectionState = 'connecting' | 'connected' | 'disconnected';

export interface StreamMessage {
  event: StreamEvent;
  /** The SSE id: the job id for job events, `ping-<ms>` for pings. */
  id: string;
  /** The event's data, parsed as JSON. */
  data: unknown;
}

export interface StreamClientOptions extends StreamSigner {
  /** The coordinator's origin (`https://drover.example.com`). */
  origin: string;
  logger: Logger;
  onMessage(message: StreamMessage): void;
  /** Connection state changes (status.json); `error` says why the stream is not connected. */
  onState?(state: ConnectionState, error: string | null): void;
  /**
   * Runs before each connection attempt (the workflows report). Its failure is logged once the
   * stream is open; when the stream fails too, the attempt's one line says why.
   */
  beforeConnect?(): Promise<void>;
  /** A connection silent for this long (no event, pings included) is dropped and reopened. */
  idleTimeoutMs?: number;
  /**
   * A connection that stayed open this long (1 s by default) was healthy: its cut is followed by a
   * prompt reconnect (the delay starts again from its base) rather than a longer one.
   */
  healthyAfterMs?: number;
  /** The queue's capacity, announced to the coordinator, which hands jobs over no faster. */
  queueCapacity?: number;
  backoff?: Backoff;
}

const EVENTS = Object.values(StreamEvent);

/**
 * Holds `GET /v1/agent/stream` open. Reconnects are driven here, not by EventSource: after any
 * failure (network error, HTTP error, stream end, or the liveness watchdog: no event for
 * `idleTimeoutMs`) the connection is closed and reopened after an exponential backoff with full
 * jitter (at most ~30 s). A cut of a stream that had been open for `healthyAfterMs` resets the
 * delay, so a flapping link is crossed again within half a second, while a coordinator that is
 * down, or that drops every connection at once, still sees the delays grow. Each attempt is signed
 * afresh. The coordinator sends every open job again at each connect, so nothing is lost in
 * between.
 */
export class StreamClient {
  #source: EventSource | null = null;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #watchdog: NodeJS.Timeout | null = null;
  #openedAt: number | null = null;
  #stopped = true;
  #state: ConnectionState = 'disconnected';
  #attempt = 0;
  readonly #backoff: Backoff;
  readonly #idleTimeoutMs: number;
  readonly #healthyAfterMs: number;
  readonly #options: StreamClientOptions;

  constructor(options: StreamClientOptions) {
    this.#options = options;
    this.#backoff = options.backoff ?? new Backoff({ baseMs: 500, capMs: 30_000 });
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
    this.#healthyAfterMs = options.healthyAfterMs ?? 1_000;
  }

  get state(): ConnectionState {
    return this.#state;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    void this.#connect();
  }

  /** Closes the stream for good. */
  stop(): void {
    this.#stopped = true;
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
    this.#closeSource();
    this.#setState('disconnected', null);
  }

  async #connect(): Promise<void> {
    this.#reconnectTimer = null;
    if (this.#stopped) return;
    const attempt = ++this.#attempt;
    this.#setState('connecting', null);
    let prepareError: unknown = null;
    try {
      await this.#options.beforeConnect?.();
    } catch (error) {
      prepareError = error;
    }
    if (this.#stopped || attempt !== this.#attempt) return;

    const url = new URL('/v1/agent/stream', this.#options.origin);
    if (this.#options.queueCapacity !== undefined)
      url.searchParams.set('capacity', String(this.#options.queueCapacity));
    // The network error behind a failed attempt, for its log line (EventSource passes on only text).
    let fetchError: unknown = null;
    const signed = signedFetch(this.#options);
    const fetch: FetchLike = (input, init) =>
      signed(input, init).catch((error: unknown) => {
        fetchError = error;
        throw error;
      });
    const source = new EventSource(url, { fetch });
    this.#source = source;
    this.#armWatchdog(source);
    source.addEventListener('open', () => {
      if (source !== this.#source) return;
      this.#openedAt = Date.now();
      this.#armWatchdog(source);
      this.#options.logger.info(`connected to the coordinator at ${this.#options.origin}`);
      if (prepareError !== null) {
        const message = prepareError instanceof Error ? prepareError.message : String(prepareError);
        this.#options.logger.warn({ err: prepareError }, `connected, but ${message}`);
      }
      this.#setState('connected', null);
    });
    for (const event of EVENTS) {
      source.addEventListener(event, (message: MessageEvent) => {
        if (source !== this.#source) return;
        this.#armWatchdog(source);
        let data: unknown;
        try {
          data = JSON.parse(String(message.data));
        } catch {
          this.#options.logger.warn({ event }, `ignored a ${event} event whose data is not JSON`);
          return;
        }
        try {
          this.#options.onMessage({ event, id: message.lastEventId, data });
        } catch (error) {
          this.#options.logger.error({ err: error, event }, `the ${event} event could not be handled`);
        }
      });
    }
    source.addEventListener('error', (event: Event & { code?: number; message?: string }) => {
      if (source !== this.#source) return;
      const wasOpen = this.#openedAt !== null;
      if (prepareError !== null && !wasOpen)
        this.#options.logger.debug({ err: prepareError }, 'the preparation of the failed attempt failed too');
      this.#fail(
        fetchError !== null && !wasOpen
          ? `cannot reach ${this.#options.origin}: ${describeNetworkError(fetchError)}`
          : describeError(event.code, event.message),
      );
    });
  }

  #fail(reason: string): void {
    const wasOpen = this.#openedAt !== null;
    if (wasOpen && Date.now() - this.#openedAt! >= this.#healthyAfterMs) this.#backoff.reset();
    this.#closeSource();
    if (this.#stopped) return;
    const delay = this.#backoff.next();
    const message = `${wasOpen ? 'the stream dropped' : 'cannot open the stream'}: ${reason}`;
    this.#options.logger.warn({ retryInMs: delay }, `${message}; reconnecting in ${formatDuration(delay)}`);
    this.#setState('disconnected', message);
    this.#reconnectTimer = setTimeout(() => void this.#connect(), delay);
  }

  #armWatchdog(source: EventSource): void {
    if (this.#watchdog) clearTimeout(this.#watchdog);
    this.#watchdog = setTimeout(() => {
      if (source === this.#source)
        this.#fail(`no event from the coordinator for ${formatDuration(this.#idleTimeoutMs)}`);
    }, this.#idleTimeoutMs);
  }

  #closeSource(): void {
    if (this.#watchdog) clearTimeout(this.#watchdog);
    this.#watchdog = null;
    this.#source?.close();
    this.#source = null;
    this.#openedAt = null;
  }

  #setState(state: ConnectionState, error: string | null): void {
    if (state === this.#state && error === null) return;
    this.#state = state;
    this.#options.onState?.(state, error);
  }
}

/** Why EventSource gave up on a connection, from the HTTP status or its text. */
function describeError(code: number | undefined, message: string | undefined): string {
  if (code === 401)
    return 'the coordinator refused the agent signature (HTTP 401: revoked agent? a clock far off is corrected at the next attempt)';
  if (code !== undefined) return `the coordinator answered HTTP ${code}`;
  if (!message) return 'the connection closed';
  // A read of an open stream that failed: undici's `TypeError: terminated: <cause>`.
  const cut = /^TypeError: terminated(?:: (.+))?$/.exec(message);
  if (cut) return `the connection was cut${cut[1] ? ` (${cut[1]})` : ''}`;
  return message.replace(/^TypeError: /, '');
}
