import type { Logger } from 'pino';
import { AGENT_REPORTS_CHECKED, AGENT_REPORTS_HEADER, retryAfterMs, showControls, StreamEvent } from '@drover/shared';
import { Backoff } from '../util/backoff.js';
import { formatDuration } from '../exec/durations.js';
import { describeNetworkError } from '../http/client.js';
import { discardBody, readText, type HttpResponse } from '../http/request.js';
import { OversizedEventError, readEvents, type ServerSentEvent } from './event-reader.js';
import { openSignedStream, type StreamSigner } from './open-stream.js';

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
   * Runs before each connection attempt: makes the reports the coordinator is to have before the
   * stream opens (the workflows, the labels), or returns a claim that it holds them already, sent
   * as the stream's `reports` parameter (the daemon's ReportClaims). Its failure is logged once
   * the stream is open; when the stream fails too, the attempt's one line says why. Not done
   * within `prepareTimeoutMs`, it is not waited for: the stream opens without a claim (said once
   * open) while the reports go on, and their failure then is logged when it comes.
   */
  beforeConnect?(): Promise<string | null | void>;
  /** How long an attempt waits for `beforeConnect` (60 s by default). */
  prepareTimeoutMs?: number;
  /** Whether the coordinator that opened the stream checks a reports claim (its `x-agent-reports: checked`). */
  onReportsChecked?(checks: boolean): void;
  /** The coordinator refused the claim (409 `reports_outdated`); the next attempt, made at once, is to report. */
  onReportsOutdated?(): void;
  /**
   * A connection silent for this long (nothing received: no event, no ping, no part of one) is
   * dropped and reopened.
   */
  idleTimeoutMs?: number;
  /**
   * A connection that stayed open this long (1 s by default) was healthy: its cut is followed by a
   * prompt reconnect (the delay starts again from its base) rather than a longer one.
   */
  healthyAfterMs?: number;
  /** The cap of one event (event-reader.ts, MAX_EVENT_CHARS by default; tests pass a small one). */
  maxEventChars?: number;
  /** The queue's capacity, announced to the coordinator, which hands jobs over no faster. */
  queueCapacity?: number;
  backoff?: Backoff;
  /** A number in [0, 1); Math.random by default (tests pass their own). */
  random?: () => number;
}

/** The reconnect delays' bounds: the coordinator sheds what its budget cannot take (docs/agent.md). */
const BACKOFF = { baseMs: 500, capMs: 10_000 };
/** The longest wait a `Retry-After` or a `retry` hint may impose (a bad value cannot park the agent). */
const MAX_ASKED_WAIT_MS = 120_000;
/**
 * The shortest wait after a shed (503 with `Retry-After`), whatever it asked: `Retry-After: 0`, or
 * a date already past on this machine's clock, must not make a loop of attempts.
 */
const MIN_SHED_WAIT_MS = 1_000;

const EVENTS = new Set<string>(Object.values(StreamEvent));

/**
 * Holds `GET /v1/agent/stream` open. After any failure (network error, HTTP error, stream end, an
 * event past the reader's cap, or the liveness watchdog: nothing received for `idleTimeoutMs`) the
 * connection is closed and reopened after an exponential backoff with full jitter (at most 10 s).
 * A cut of a stream that had been open for `healthyAfterMs` resets the delay: the first attempt
 * then comes within the stream's SSE `retry` hint (the time over which the coordinator can take
 * its whole fleet back; half a second without one), so a flapping link is crossed again at once
 * while a fleet that lost its streams together comes back spread out. A 503 with `Retry-After` (the coordinator shedding a reconnect
 * storm) is waited out as asked, within one more second of jitter: at least a second, and at
 * least the backoff's next delay, which repeated sheds make grow as failures do.
 * Each attempt is signed afresh. The coordinator sends every open job again at each connect, so
 * nothing is lost in between.
 */
export class StreamClient {
  /** The connection attempt under way or open; aborting it closes the stream. */
  #attempt: AbortController | null = null;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #watchdog: NodeJS.Timeout | null = null;
  #openedAt: number | null = null;
  /** The last attempt's claim was refused: the next one sends none. */
  #claimRefused = false;
  #stopped = true;
  #state: ConnectionState = 'disconnected';
  readonly #backoff: Backoff;
  /** The last SSE `retry` hint received (ms), kept across connections. */
  #retryHintMs: number | null = null;
  readonly #random: () => number;
  readonly #idleTimeoutMs: number;
  readonly #healthyAfterMs: number;
  readonly #prepareTimeoutMs: number;
  readonly #options: StreamClientOptions;

  constructor(options: StreamClientOptions) {
    this.#options = options;
    this.#random = options.random ?? Math.random;
    this.#backoff = options.backoff ?? new Backoff({ ...BACKOFF, random: this.#random });
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
    this.#healthyAfterMs = options.healthyAfterMs ?? 1_000;
    this.#prepareTimeoutMs = options.prepareTimeoutMs ?? 60_000;
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
    this.#close();
    this.#setState('disconnected', null);
  }

  async #connect(): Promise<void> {
    this.#reconnectTimer = null;
    if (this.#stopped) return;
    const attempt = new AbortController();
    this.#attempt = attempt;
    const current = () => attempt === this.#attempt;
    this.#setState('connecting', null);
    let prepareError: unknown = null;
    let claim: string | null = null;
    try {
      claim = (await this.#prepare()) ?? null;
    } catch (error) {
      prepareError = error;
    }
    if (!current()) return;

    const { origin, logger } = this.#options;
    const url = new URL('/v1/agent/stream', origin);
    if (this.#options.queueCapacity !== undefined)
      url.searchParams.set('capacity', String(this.#options.queueCapacity));
    // After a refused claim the attempt is to report; a second refusal in a row is a failure.
    if (claim !== null && !this.#claimRefused) url.searchParams.set('reports', claim);
    else claim = null;
    this.#armWatchdog(attempt);
    const failed = (reason: string) => {
      if (!current()) return;
      if (prepareError !== null && this.#openedAt === null)
        logger.debug({ err: prepareError }, 'the preparation of the failed attempt failed too');
      this.#fail(reason);
    };
    let res: HttpResponse;
    try {
      res = await openSignedStream(this.#options, url, attempt.signal);
    } catch (error) {
      failed(`cannot reach ${origin}: ${describeNetworkError(error)}`);
      return;
    }
    if (!current()) {
      discardBody(res.body);
      return;
    }
    const contentType = String(res.headers['content-type'] ?? '');
    if (claim !== null && (res.statusCode === 409 || res.statusCode === 400 || res.statusCode === 422)) {
      discardBody(res.body);
      this.#claimRefused = true;
      if (res.statusCode === 409) {
        logger.info('the coordinator does not hold what this agent last reported: reporting again');
        this.#options.onReportsOutdated?.();
      } else {
        // A coordinator that knows no `reports` parameter refuses the request (an older version
        // put back in place of the one that checked claims): it is told the reports again, and is
        // sent no claim until a stream of its says it checks them.
        logger.info(
          'the coordinator refused the claim of what this agent last reported (an older version?): reporting again',
        );
        this.#options.onReportsChecked?.(false);
      }
      this.#reconnectTimer = setTimeout(() => void this.#connect(), 0);
      return;
    }
    if (res.statusCode !== 200 || !contentType.startsWith('text/event-stream')) {
      // A 401 says why in its body (a revoked agent, an unknown one): read, where another is dropped.
      const why = res.statusCode === 401 ? await refusalMessage(res.body) : null;
      if (res.statusCode !== 401) discardBody(res.body);
      if (!current()) return;
      // A date is read on the coordinator's clock, as well as it is known (this answer's Date included).
      const asked =
        res.statusCode === 503 ? retryAfterMs(res.headers['retry-after'], this.#options.clock?.now()) : null;
      // At most two minutes, whatever a coordinator asks.
      const askedMs = asked === null ? null : Math.min(asked, MAX_ASKED_WAIT_MS);
      if (askedMs !== null && current()) {
        this.#retryAsked(askedMs);
        return;
      }
      failed(describeRefusal(res.statusCode, contentType, why));
      return;
    }

    this.#openedAt = Date.now();
    this.#claimRefused = false;
    this.#options.onReportsChecked?.(res.headers[AGENT_REPORTS_HEADER] === AGENT_REPORTS_CHECKED);
    this.#armWatchdog(attempt);
    logger.info(`connected to the coordinator at ${origin}`);
    if (prepareError !== null) {
      const message = prepareError instanceof Error ? prepareError.message : String(prepareError);
      logger.warn({ err: prepareError }, `connected, but ${message}`);
    }
    this.#setState('connected', null);
    try {
      await readEvents(res.body, {
        onEvent: (event) => {
          if (current()) this.#handle(event);
        },
        onRetry: (retryMs) => {
          if (current()) this.#retryHintMs = Math.min(retryMs, MAX_ASKED_WAIT_MS);
        },
        // Any bytes prove the connection alive, not only a whole event: a large job event on a
        // slow link can take longer than the timeout to arrive, and would be cut at every attempt.
        // An event that never ends is stopped by the reader's cap instead.
        onData: () => {
          if (current()) this.#armWatchdog(attempt);
        },
        ...(this.#options.maxEventChars ? { maxEventChars: this.#options.maxEventChars } : {}),
      });
      failed('the connection closed');
    } catch (error) {
      if (error instanceof OversizedEventError) failed(error.message);
      else failed(`the connection was cut (${describeCut(error)})`);
    }
  }

  /**
   * `beforeConnect`, waited for `prepareTimeoutMs` at most: a report whose answer hangs must not
   * keep the stream from opening (the call's own deadline ends it later; its failure is logged then).
   */
  async #prepare(): Promise<string | null | void> {
    const work = this.#options.beforeConnect?.();
    if (!work) return null;
    const ms = this.#prepareTimeoutMs;
    let late = false;
    work.catch((error: unknown) => {
      if (!late) return; // said once the stream is open, as any failure of the preparation
      const message = error instanceof Error ? error.message : String(error);
      this.#options.logger.warn({ err: error }, `a report made before connecting failed after all: ${message}`);
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        late = true;
        reject(
          new Error(
            `the reports made before connecting did not finish in ${formatDuration(ms)}; the stream was opened without waiting for them`,
          ),
        );
      }, ms).unref();
    });
    try {
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** An event of the open stream: known ones go to `onMessage`. */
  #handle(message: ServerSentEvent): void {
    const { event } = message;
    if (!EVENTS.has(event)) return;
    const { logger } = this.#options;
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      logger.warn({ event }, `ignored a ${event} event whose data is not JSON`);
      return;
    }
    try {
      this.#options.onMessage({ event: event as StreamEvent, id: message.id, data });
    } catch (error) {
      logger.error({ err: error, event }, `the ${event} event could not be handled`);
    }
  }

  #fail(reason: string): void {
    const wasOpen = this.#openedAt !== null;
    const healthy = wasOpen && Date.now() - this.#openedAt! >= this.#healthyAfterMs;
    if (healthy) this.#backoff.reset();
    this.#close();
    if (this.#stopped) return;
    // The first attempt after a healthy stream spreads over the coordinator's hint; the next ones back off.
    const delay =
      healthy && this.#retryHintMs !== null ? Math.floor(this.#random() * this.#retryHintMs) : this.#backoff.next();
    const message = `${wasOpen ? 'the stream dropped' : 'cannot open the stream'}: ${reason}`;
    this.#options.logger.warn({ retryInMs: delay }, `${message}; reconnecting in ${formatDuration(delay)}`);
    this.#setState('disconnected', message);
    this.#reconnectTimer = setTimeout(() => void this.#connect(), delay);
  }

  /**
   * A 503 with `Retry-After`: the coordinator is shedding a reconnect storm; come back when it said,
   * but not before a second nor before the backoff's next delay (each shed counts toward it, so an
   * agent shed again and again slows down as after failures; a healthy stream resets it).
   */
  #retryAsked(askedMs: number): void {
    this.#close();
    if (this.#stopped) return;
    const floor = Math.max(MIN_SHED_WAIT_MS, this.#backoff.next());
    const delay = Math.max(askedMs, floor) + Math.floor(this.#random() * 1_000);
    const message = `the coordinator is taking other agents back first (HTTP 503)`;
    const why = askedMs >= floor ? 'as it asked' : `it asked for ${formatDuration(askedMs)}`;
    this.#options.logger.info({ retryInMs: delay }, `${message}; reconnecting in ${formatDuration(delay)}, ${why}`);
    this.#setState('disconnected', message);
    this.#reconnectTimer = setTimeout(() => void this.#connect(), delay);
  }

  #armWatchdog(attempt: AbortController): void {
    if (this.#watchdog) clearTimeout(this.#watchdog);
    this.#watchdog = setTimeout(() => {
      if (attempt === this.#attempt)
        this.#fail(`nothing received from the coordinator for ${formatDuration(this.#idleTimeoutMs)}`);
    }, this.#idleTimeoutMs);
  }

  #close(): void {
    if (this.#watchdog) clearTimeout(this.#watchdog);
    this.#watchdog = null;
    this.#attempt?.abort();
    this.#attempt = null;
    this.#openedAt = null;
  }

  #setState(state: ConnectionState, error: string | null): void {
    if (state === this.#state && error === null) return;
    this.#state = state;
    this.#options.onState?.(state, error);
  }
}

/**
 * The `message` of a refusal's JSON body (`The agent has been revoked`), shown as a line of the log
 * and of `drover-agent status`: control characters and line breaks as `\xHH`, at most 200
 * characters. Null when the body is not the coordinator's error (a proxy's page), or too large.
 */
async function refusalMessage(body: HttpResponse['body']): Promise<string | null> {
  try {
    const { message } = JSON.parse(await readText(body, 4096)) as { message?: unknown };
    if (typeof message !== 'string' || message.trim() === '') return null;
    const shown = showControls(message.trim());
    return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
  } catch {
    return null;
  }
}

/** Why an answer is not the event stream: its HTTP status (with the coordinator's reason), or what it carries instead. */
function describeRefusal(status: number, contentType: string, why: string | null): string {
  if (status === 401 && why !== null) return `the coordinator refused the agent signature (HTTP 401: ${why})`;
  if (status === 401)
    return 'the coordinator refused the agent signature (HTTP 401: revoked agent? a clock far off is corrected at the next attempt)';
  if (status !== 200) return `the coordinator answered HTTP ${status}`;
  return `the coordinator answered HTTP 200 without an event stream (content-type \`${contentType}\`)`;
}

/**
 * Why an open stream failed: the coordinator closed the connection in the middle of the answer
 * (Node's ECONNRESET without a system call behind it), or a network error.
 */
function describeCut(error: unknown): string {
  const { code, syscall } = error as NodeJS.ErrnoException;
  return code === 'ECONNRESET' && syscall === undefined ? 'other side closed' : describeNetworkError(error);
}
