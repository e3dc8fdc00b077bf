/** What a failure log writes to: a pino logger, or a part of one. */
export interface FailureLogger {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  debug?(obj: object, msg: string): void;
}

/**
 * The log of a task that runs again and again (a sweep, a delivery round, a refresh): the first
 * failure of a run of them is an error with its stack; the next ones are debug lines; the first
 * success after them says how many turns failed and for how long. An outage of the database makes
 * every such task fail at each turn: one stack per task in the log, not one every second, and a
 * line when it works again.
 */
export class FailureLog {
  private failures = 0;
  private since = 0;

  constructor(
    private readonly logger: FailureLogger,
    private readonly message: string,
    private readonly now: () => number = Date.now,
  ) {}

  failed(error: unknown, fields: object = {}): void {
    this.failures += 1;
    if (this.failures === 1) {
      this.since = this.now();
      this.logger.error({ ...fields, err: error }, this.message);
    } else this.logger.debug?.({ ...fields, err: error, failures: this.failures }, this.message);
  }

  succeeded(): void {
    if (this.failures === 0) return;
    this.logger.info(
      { failures: this.failures, failingMs: this.now() - this.since },
      `${this.message}: works again after ${this.failures} failed turn${this.failures === 1 ? '' : 's'}`,
    );
    this.failures = 0;
  }
}
