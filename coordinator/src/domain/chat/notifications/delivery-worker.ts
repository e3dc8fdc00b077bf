import type { Logger } from 'pino';
import type { ChatOutboxRepository, ClaimedMessage } from '../../model/chat-outbox.js';
import type { ChatProvider } from '../../model/triggers.js';
import { isoAt, type Clock } from '../../../util/clock.js';
import { FailureLog } from '../../../util/failure-log.js';
import { DeliveryFailure, type ChatSenders } from './sender.js';

/** How often the worker looks for due messages. */
export const OUTBOX_POLL_MS = 1000;
/** How long a claim lasts: far beyond a send's own timeout (10 s), so a live worker never loses it. */
export const OUTBOX_LEASE_MS = 60_000;
/** How soon a round follows a wake (a burst of job ends makes one round). */
export const WAKE_MS = 20;
/** How often delivered answers of no job are looked for, and how long they are kept. */
const PRUNE_EVERY_MS = 3600_000;
const JOBLESS_KEPT_MS = 86_400_000;
/** Messages claimed (and sent concurrently) per round. */
export const OUTBOX_BATCH = 20;
/** The first retry's delay; each next one doubles, up to RETRY_MAX_MS. */
export const RETRY_BASE_MS = 5000;
export const RETRY_MAX_MS = 3600_000;

const PROVIDER_NAMES: Record<ChatProvider, string> = { slack: 'Slack', discord: 'Discord' };
const SETTINGS: Record<ChatProvider, string> = { slack: 'DROVER_SLACK_*', discord: 'DROVER_DISCORD_*' };

/**
 * The delay before the next attempt after `attempts` failed ones: exponential (5 s, 10 s, 20 s,
 * ... up to an hour) with jitter (half to all of it), so that messages held up by one outage do
 * not all come back at once. `random` is in [0, 1).
 */
export function retryDelayMs(attempts: number, random: number): number {
  const exponential = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.max(0, Math.min(attempts - 1, 30)));
  return Math.round(exponential * (0.5 + random / 2));
}

/** The connected workspace of a provider's team: its organization, and its token when it has one. */
export type WorkspaceLookup = (
  provider: ChatProvider,
  teamId: string,
) => Promise<{ orgId: string; token: string | null } | null>;

export interface DeliveryWorkerOptions {
  outbox: ChatOutboxRepository;
  senders: ChatSenders;
  workspace: WorkspaceLookup;
  clock: Clock;
  logger: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;
  /** The coordinator's public URL, read at each send (known only once listening). */
  publicUrl: () => string;
  /** DROVER_CHAT_GIVE_UP_SECONDS, in ms: a message not delivered this long after it was queued is given up. */
  giveUpAfterMs: number;
  pollIntervalMs?: number;
  random?: () => number;
}

export interface DeliveryRound {
  sent: number;
  retrying: number;
  failed: number;
}

/**
 * Sends the chat outbox's due messages (docs/chat.md, "Notifications"), started with the
 * coordinator and stopped on close. Nothing on the job path waits for it: the job's end only
 * writes the message. Each message is claimed with a lease before it is sent, so coordinators
 * sharing the database never send one twice; a failed attempt is retried with backoff (or after
 * the provider's `Retry-After`), until it is given up `giveUpAfterMs` after it was queued, or at
 * once when retrying cannot help (the workspace is not connected, the channel does not exist).
 */
export class DeliveryWorker {
  private timer: NodeJS.Timeout | undefined;
  /** When the scheduled round is due (ms since the epoch), or null while a round runs or before start. */
  private dueAt: number | null = null;
  private started = false;
  /** A wake came during a round: the next round follows it soon. */
  private wakeAfterRound = false;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private lastPrune = 0;

  private readonly roundFailures: FailureLog;

  constructor(private readonly o: DeliveryWorkerOptions) {
    this.roundFailures = new FailureLog(o.logger, 'chat outbox round failed', () => o.clock.now());
  }

  start(): void {
    this.started = true;
    this.schedule(this.pollMs);
  }

  /**
   * Something was queued (a job ended, a mention was answered): a round within WAKE_MS instead
   * of at the next poll. A burst of wakes makes one round.
   */
  wake(): void {
    if (!this.started || this.stopped) return;
    if (this.dueAt === null) {
      // A round is under way: it is followed by one soon after.
      this.wakeAfterRound = true;
      return;
    }
    if (this.dueAt > Date.now() + WAKE_MS) this.schedule(WAKE_MS);
  }

  private get pollMs(): number {
    return this.o.pollIntervalMs ?? OUTBOX_POLL_MS;
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.dueAt = Date.now() + ms;
    this.timer = setTimeout(() => this.tick(), ms);
    this.timer.unref();
  }

  private tick(): void {
    this.dueAt = null;
    this.running = this.running
      .then(() => this.round())
      .then(() => this.prune())
      .finally(() => {
        if (this.stopped) return;
        const soon = this.wakeAfterRound;
        this.wakeAfterRound = false;
        this.schedule(soon ? WAKE_MS : this.pollMs);
      });
  }

  /** Sends every message due now (rounds of OUTBOX_BATCH); tests call it to drive the worker. */
  async deliverDue(): Promise<DeliveryRound> {
    const next = this.running.then(() => this.round());
    this.running = next;
    return next;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running.catch(() => undefined);
  }

  /** Now and then, the answers that started no job are deleted once a day old (nothing shows them). */
  private async prune(): Promise<void> {
    const now = this.o.clock.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    try {
      const pruned = await this.o.outbox.pruneJobless(isoAt(now - JOBLESS_KEPT_MS));
      if (pruned > 0) this.o.logger.debug({ pruned }, 'chat outbox: old answers deleted');
    } catch (error) {
      this.o.logger.error({ err: error }, 'chat outbox prune failed');
    }
  }

  private async round(): Promise<DeliveryRound> {
    const total: DeliveryRound = { sent: 0, retrying: 0, failed: 0 };
    try {
      for (;;) {
        if (this.stopped) break;
        const now = this.o.clock.now();
        const { claimed, damaged } = await this.o.outbox.claimDue(
          isoAt(now),
          isoAt(now + OUTBOX_LEASE_MS),
          OUTBOX_BATCH,
        );
        for (const { id, column, error } of damaged) {
          this.o.logger.error(
            { err: error, messageId: Number(id), field: column },
            'chat message: its stored row does not parse; given up',
          );
          total.failed += 1;
        }
        const results = await Promise.all(claimed.map((m) => this.deliver(m)));
        for (const r of results) total[r] += 1;
        if (claimed.length + damaged.length < OUTBOX_BATCH) break;
      }
      this.roundFailures.succeeded();
    } catch (error) {
      this.roundFailures.failed(error);
    }
    return total;
  }

  private async deliver(m: ClaimedMessage): Promise<keyof DeliveryRound> {
    const { outbox, clock, logger } = this.o;
    const context = { messageId: m.id, jobId: m.jobId, provider: m.provider, attempts: m.attempts };
    try {
      await this.send(m);
      await outbox.markSent(m.id, m.claimToken, isoAt(clock.now()));
      logger.debug(context, 'chat message delivered');
      return 'sent';
    } catch (error) {
      const failure =
        error instanceof DeliveryFailure
          ? error
          : new DeliveryFailure(`unexpected error: ${(error as Error).message ?? String(error)}`, 'later');
      const now = clock.now();
      const giveUpAt = Date.parse(m.createdAt) + this.o.giveUpAfterMs;
      const wait = failure.retryAfterMs ?? retryDelayMs(m.attempts, (this.o.random ?? Math.random)());
      const nextAt = Math.min(now + wait, giveUpAt);
      const givesUp =
        failure.retry === 'never' || now >= giveUpAt || (failure.retryAfterMs !== null && now + wait > giveUpAt);
      if (givesUp) {
        const why =
          failure.retry === 'never'
            ? failure.message
            : `gave up after ${m.attempts} attempts over ${describeMs(now - Date.parse(m.createdAt))}: ${failure.message}`;
        await outbox.markFailed(m.id, m.claimToken, why, isoAt(now));
        logger.error({ ...context, error: why }, 'chat message not delivered; given up');
        return 'failed';
      }
      await outbox.retryLater(m.id, m.claimToken, failure.message, isoAt(nextAt));
      logger.warn(
        { ...context, error: failure.message, nextAttemptAt: isoAt(nextAt) },
        'chat message not delivered; will retry',
      );
      return 'retrying';
    }
  }

  private async send(m: ClaimedMessage): Promise<void> {
    const name = PROVIDER_NAMES[m.provider];
    const sender = this.o.senders[m.provider];
    if (!sender) {
      throw new DeliveryFailure(
        `${name} is not set up on this coordinator (its operator sets ${SETTINGS[m.provider]})`,
        'later',
      );
    }
    const workspace = await this.o.workspace(m.provider, m.target.teamId);
    if (!workspace || workspace.orgId !== m.orgId) {
      const what = m.provider === 'slack' ? 'Slack workspace' : 'Discord server';
      throw new DeliveryFailure(`${what} ${m.target.teamId} is not connected to this organization`, 'never');
    }
    await sender.send({ target: m.target, payload: m.payload, token: workspace.token, publicUrl: this.o.publicUrl() });
  }
}

function describeMs(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3600_000)} h`;
}
