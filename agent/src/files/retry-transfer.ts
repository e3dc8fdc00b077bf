import type { Backoff } from '../util/backoff.js';
import { pause } from './format.js';
import { abortError, TransferError } from './transfer-error.js';

export interface TransferRetryOptions {
  /** Attempts in all, the first one counted. */
  attempts: number;
  backoff: Backoff;
  signal: AbortSignal;
  /** What failed, for the log line: `download of input file \`report\``. */
  what: string;
  log(text: string): void;
  /** Before the attempt after a refused URL (`refresh`); without it, such a failure waits like `retry`. */
  refresh?(): Promise<void> | void;
  /**
   * Whether the failed attempt moved the transfer forward (a resumable download that got further
   * than ever before the link dropped): then it does not count, the attempts start again from the
   * first. It must not hold for bytes fetched again: the attempts would never run out.
   */
  progressed?(): boolean;
}

/**
 * Runs `run` (given the attempt's number from 1) until it succeeds, the retry loop of every file
 * transfer: a TransferError of kind `retry` or `refresh` is logged and tried again, after
 * `refresh` for a refused URL, else after a pause of the backoff (cut short by `signal`, which
 * then throws its TransferAborted). Anything else, and the last attempt's failure, is thrown.
 * An attempt that `progressed` is not counted: only failures in a row that move nothing end it;
 * nor is one the coordinator did not answer (`coordinatorAway`: a restart, an outage), waited out
 * until it answers or `signal` ends the job (its timeout, the shutdown), said once per outage.
 */
export async function retryTransfer<T>(
  run: (attempt: number) => Promise<T>,
  options: TransferRetryOptions,
): Promise<T> {
  let away = false;
  for (let attempt = 1; ; attempt++) {
    try {
      return await run(attempt);
    } catch (error) {
      if (options.progressed?.() === true) {
        attempt = 1;
        options.backoff.reset();
      }
      if (error instanceof TransferError && error.coordinatorAway && error.kind !== 'final') {
        if (!away) {
          options.log(
            `${options.what} failed (${error.message}); the coordinator does not answer: trying again until it does`,
          );
        }
        away = true;
        attempt -= 1; // not an attempt: the coordinator was away
        await pause(options.backoff.next(), options.signal).catch(() => Promise.reject(abortError(options.signal)));
        continue;
      }
      away = false;
      if (!(error instanceof TransferError) || error.kind === 'final' || attempt >= options.attempts) throw error;
      options.log(
        `${options.what} failed (${error.message}); trying again (attempt ${attempt + 1} of ${options.attempts})`,
      );
      if (error.kind === 'refresh' && options.refresh) await options.refresh();
      else await pause(options.backoff.next(), options.signal).catch(() => Promise.reject(abortError(options.signal)));
    }
  }
}
