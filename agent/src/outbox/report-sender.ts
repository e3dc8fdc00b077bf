import type { Logger } from 'pino';
import type { HttpAnswer } from '../http/client.js';
import { Backoff } from '../util/backoff.js';
import { judgeAnswer, standInFor } from './delivery-policy.js';
import type { Outbox, OutboxEntry } from './outbox.js';
import { describeReport, fitReport, maskReport, type Report } from './report.js';
import type { Masker } from '../exec/secret-masker.js';

export type Transport = (report: Report) => Promise<HttpAnswer>;

export type SendOutcome =
  | { outcome: 'delivered'; answer: HttpAnswer }
  /**
   * Kept in the outbox, to be sent after the reports before it when the coordinator is back.
   * `delivery`, for a report this process kept (but log batches): how it ended once the outbox
   * sent it, delivered or dropped; it never settles if the agent stops first.
   */
  | { outcome: 'stored'; delivery?: Promise<SendOutcome> }
  | { outcome: 'dropped'; reason: string; answer?: HttpAnswer };

export interface ReportSenderOptions {
  outbox: Outbox;
  transport: Transport;
  logger: Logger;
  /** Called once per report when it is finally delivered or dropped, from the outbox too. */
  onSettled?(report: Report, outcome: 'delivered' | 'dropped'): void;
  /** Called when the number of reports waiting in the outbox changes. */
  onBacklog?(size: number): void;
  /** Delays between outbox retries while the coordinator cannot be reached. */
  backoff?: Backoff;
  /** The secret values to mask in every report (maskReport), as known when it is sent. */
  masker?(): Masker;
}

/**
 * Sends the agent's reports in the order they are made, one at a time. While the coordinator
 * answers, a report goes straight out; when it cannot be delivered (network error, 5xx, 401,
 * 429) it is written to the outbox, and so is every report after it until the outbox has been
 * emptied in order (on a retry timer with backoff, and at once when the stream reconnects).
 * Other 4xx answers are final: the report is logged and dropped.
 */
export class ReportSender {
  #chain: Promise<unknown> = Promise.resolve();
  #offline = false;
  /** The stored reports whose delivery a caller may wait for (`delivery`), by their outbox entry. */
  readonly #awaited = new Map<OutboxEntry, (outcome: SendOutcome) => void>();
  #timer: NodeJS.Timeout | null = null;
  /** The next reading of the outbox's files that could not be read (Outbox.retryUnreadable). */
  #unreadableTimer: NodeJS.Timeout | null = null;
  #closed = false;
  readonly #backoff: Backoff;
  readonly #options: ReportSenderOptions;

  constructor(options: ReportSenderOptions) {
    this.#options = options;
    this.#backoff = options.backoff ?? new Backoff({ baseMs: 1000, capMs: 30_000 });
    if (options.outbox.size > 0) this.#offline = true;
    this.#scheduleUnreadable();
  }

  /** True while reports are being kept in the outbox. */
  get offline(): boolean {
    return this.#offline;
  }

  /** Sends a report (secret values masked first, then its texts fitted to the wire), or keeps it in the outbox. */
  send(report: Report): Promise<SendOutcome> {
    const masked = fitReport(this.#options.masker ? maskReport(report, this.#options.masker()) : report);
    return this.#enqueue(() => this.#deliver(masked));
  }

  /** Tries the outbox now (the stream just connected): resets the retry delay. */
  drainNow(): Promise<boolean> {
    this.#backoff.reset();
    return this.#enqueue(() => this.#drain());
  }

  /**
   * At shutdown: tries to empty the outbox within `timeoutMs`. Resolves true when nothing is
   * left to send; what is left stays on disk for the next start.
   */
  async flush(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([this.#enqueue(() => this.#drain()), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#unreadableTimer) clearTimeout(this.#unreadableTimer);
    this.#unreadableTimer = null;
  }

  #enqueue<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(work);
    this.#chain = next.catch(() => {});
    return next;
  }

  async #deliver(report: Report): Promise<SendOutcome> {
    if (this.#offline || this.#options.outbox.size > 0) return this.#store(report);
    const got = await this.#attempt(report);
    const verdict = judgeAnswer(report, got);
    if (verdict.verdict === 'retry' || 'error' in got) {
      this.#goOffline(verdict.verdict === 'retry' ? verdict.reason : 'no answer');
      return this.#store(report);
    }
    const answer = got;
    if (verdict.verdict === 'drop') {
      this.#logDrop(report, verdict.reason, verdict.expected);
      const standIn = standInFor(report, answer);
      if (standIn) return this.#deliver(standIn);
      this.#options.onSettled?.(report, 'dropped');
      return { outcome: 'dropped', reason: verdict.reason, answer };
    }
    this.#options.onSettled?.(report, 'delivered');
    return { outcome: 'delivered', answer };
  }

  async #attempt(report: Report): Promise<HttpAnswer | { error: Error }> {
    try {
      return await this.#options.transport(report);
    } catch (error) {
      return { error: error instanceof Error ? error : new Error(String(error)) };
    }
  }

  #store(report: Report): SendOutcome {
    let delivery: Promise<SendOutcome> | undefined;
    try {
      const entry = this.#options.outbox.append(report);
      if (entry && report.kind !== 'logs') {
        const settled = Promise.withResolvers<SendOutcome>();
        this.#awaited.set(entry, settled.resolve);
        delivery = settled.promise;
      }
      if (entry?.inMemory) {
        this.#options.logger.error(
          { jobId: report.jobId, report: report.kind },
          `cannot write the ${describeReport(report)} to the outbox (the disk is full?); it is kept in memory, ` +
            'and lost if the agent stops before the coordinator takes it',
        );
      }
    } catch (error) {
      this.#options.logger.error(
        { err: error, jobId: report.jobId, report: report.kind },
        `cannot write the ${describeReport(report)} to the outbox; it is lost`,
      );
      return { outcome: 'dropped', reason: (error as Error).message };
    }
    this.#options.onBacklog?.(this.#options.outbox.size);
    this.#scheduleRetry();
    return delivery ? { outcome: 'stored', delivery } : { outcome: 'stored' };
  }

  async #drain(): Promise<boolean> {
    const { outbox, logger } = this.#options;
    if (outbox.size === 0) {
      this.#offline = false;
      return true;
    }
    let sent = 0;
    for (const entry of [...outbox.entries()]) {
      if (this.#closed) return false;
      const answer = await this.#attempt(entry.report);
      const verdict = judgeAnswer(entry.report, answer);
      if (verdict.verdict === 'retry') {
        this.#goOffline(verdict.reason);
        this.#scheduleRetry();
        if (sent > 0) this.#options.onBacklog?.(outbox.size);
        return false;
      }
      const standIn = verdict.verdict === 'drop' && !('error' in answer) ? standInFor(entry.report, answer) : null;
      if (standIn) outbox.append(standIn);
      outbox.remove(entry);
      sent += 1;
      if (verdict.verdict === 'drop') this.#logDrop(entry.report, verdict.reason, verdict.expected);
      if (!standIn) this.#options.onSettled?.(entry.report, verdict.verdict === 'drop' ? 'dropped' : 'delivered');
      const settle = this.#awaited.get(entry);
      if (settle) {
        this.#awaited.delete(entry);
        const got = answer as HttpAnswer; // an error is a retry, which returned above
        settle(
          verdict.verdict === 'drop'
            ? { outcome: 'dropped', reason: verdict.reason, answer: got }
            : { outcome: 'delivered', answer: got },
        );
      }
    }
    // Stand-ins for refused finishes were appended while draining: send them too.
    if (outbox.size > 0) return this.#drain();
    this.#options.onBacklog?.(0);
    this.#backoff.reset();
    if (this.#offline)
      logger.info({ reports: sent }, `the coordinator is reachable again; sent ${sent} report(s) from the outbox`);
    this.#offline = false;
    return true;
  }

  #goOffline(reason: string): void {
    if (!this.#offline) {
      this.#options.logger.warn(
        { reason },
        `cannot deliver reports to the coordinator (${reason}); keeping them in the outbox`,
      );
    }
    this.#offline = true;
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#enqueue(() => this.#drain());
    }, this.#backoff.next());
    this.#timer.unref();
  }

  /**
   * Reads again, when their time comes, the outbox's files that could not be read; the reports
   * read are sent at once, in their turn (the reports made since wait behind them).
   */
  #scheduleUnreadable(): void {
    const at = this.#options.outbox.nextUnreadableRetryAt();
    if (this.#closed || this.#unreadableTimer || at === null) return;
    this.#unreadableTimer = setTimeout(
      () => {
        this.#unreadableTimer = null;
        void this.#enqueue(async () => {
          const added = this.#options.outbox.retryUnreadable();
          this.#scheduleUnreadable();
          if (added === 0) return;
          this.#options.onBacklog?.(this.#options.outbox.size);
          this.#backoff.reset();
          await this.#drain();
        });
      },
      Math.max(0, at - Date.now()),
    );
    this.#unreadableTimer.unref();
  }

  #logDrop(report: Report, reason: string, expected: boolean): void {
    const fields = { jobId: report.jobId, report: report.kind, reason };
    if (expected && report.kind === 'logs')
      this.#options.logger.info(
        fields,
        `job ${report.jobId} has ended on the coordinator, which takes no more of its log lines (${reason})`,
      );
    else if (expected)
      this.#options.logger.info(
        fields,
        `the coordinator already has a final result for job ${report.jobId}; not sending this one (${reason})`,
      );
    else
      this.#options.logger.warn(fields, `the coordinator refused the ${describeReport(report)} (${reason}); dropped`);
  }
}
