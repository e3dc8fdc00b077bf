import { pause } from '@drover/agent/client';
import { ApiError, CliError, CliExit, Interrupted, NoAnswer } from '../errors.js';
import { EXIT } from '../exit-codes.js';

/** The first pause after a look that got no answer, doubling up to the longest (docs/cli.md, "Waits and outages"). */
export const FIRST_RETRY_MS = 1_000;
export const LONGEST_RETRY_MS = 10_000;
/** The longest pause a `Retry-After` may ask for during a wait without a deadline. */
const LONGEST_RETRY_AFTER_MS = 60_000;

/** What a wait does with an answer it did not get: the pause before the next look, or `deadline` to give up. */
export interface OutageOptions {
  signal: AbortSignal;
  /** When the wait ends (ms since the epoch), `Infinity` without a deadline. */
  deadline: number;
  /** Told once per outage (`the coordinator did not answer (...); still waiting`), and when it is over. */
  onOutage?(message: string): void;
}

/**
 * Whether a failed look during a wait may pass: no answer (the connection refused or reset, no
 * answer in time) or a 502, 503 or 504 (a proxy in front of a coordinator that restarts). Any
 * other refusal (a 4xx, a 500) ends the wait.
 */
export function isTemporary(error: unknown): boolean {
  if (error instanceof NoAnswer) return error.temporary;
  if (error instanceof ApiError) return error.status === 502 || error.status === 503 || error.status === 504;
  return false;
}

/** What the outage was, for the one line that says it: `ECONNREFUSED`, `HTTP 503: ...`. */
function describeFailure(error: unknown): string {
  if (error instanceof NoAnswer) return error.code === 'UND_ERR_HEADERS_TIMEOUT' ? 'no answer in time' : error.code;
  if (error instanceof ApiError) return `HTTP ${error.status}${error.code ? ` ${error.code}` : ''}`;
  return String(error);
}

/**
 * Looks with `read` until it answers, through an outage of the coordinator: a temporary failure
 * (isTemporary) is looked at again after a pause of 1 s doubling to 10 s (or what `Retry-After`
 * asks), said once on stderr; the wait's deadline ends it (`{ gaveUp }`, with the last failure).
 * Another failure is thrown as it is; an interruption is Interrupted.
 */
export async function readThroughOutage<T>(
  read: () => Promise<T>,
  options: OutageOptions,
): Promise<{ value: T } | { gaveUp: Error }> {
  let retry = FIRST_RETRY_MS;
  let told = false;
  for (;;) {
    try {
      const value = await read();
      if (told) options.onOutage?.('the coordinator answers again');
      return { value };
    } catch (error) {
      if (error instanceof Interrupted || options.signal.aborted || !isTemporary(error)) throw error;
      const left = options.deadline - Date.now();
      if (left <= 0) return { gaveUp: error as Error };
      if (!told) {
        told = true;
        options.onOutage?.(`the coordinator did not answer (${describeFailure(error)}); still waiting`);
      }
      const asked =
        error instanceof ApiError && error.retryAfterSeconds !== null ? error.retryAfterSeconds * 1000 : null;
      const wait = asked === null ? retry : Math.min(Math.max(asked, FIRST_RETRY_MS), LONGEST_RETRY_AFTER_MS);
      retry = Math.min(LONGEST_RETRY_MS, retry * 2);
      try {
        await pause(Math.min(wait, left), options.signal);
      } catch {
        throw new Interrupted();
      }
    }
  }
}

/** One look of a wait: what it saw, or why the wait ends with what it saw before. */
export type Look<T> = { seen: T } | { ended: 'timeout' | 'interrupted' };

/**
 * One look of a wait (a job's, a batch's) through an outage (readThroughOutage): the wait ends at
 * its deadline or an interruption with what it saw before (`last`); before anything was seen, the
 * deadline is an error that says `what` may still run (exit 6), and an interruption is thrown.
 */
export async function lookDuringWait<T>(
  read: () => Promise<T>,
  last: T | undefined,
  what: string,
  options: OutageOptions,
): Promise<Look<T>> {
  try {
    const looked = await readThroughOutage(read, options);
    if ('value' in looked) return { seen: looked.value };
    if (last !== undefined) return { ended: 'timeout' };
    throw new WaitTimedOut(
      `the wait timed out before the coordinator answered (${looked.gaveUp.message}): ${what} may still run`,
    );
  } catch (error) {
    if (error instanceof Interrupted && last !== undefined) return { ended: 'interrupted' };
    throw error;
  }
}

/** How long one look may wait for its answer: the default (60 s), but never past the wait's deadline. */
export function answerTimeoutBefore(deadline: number): number {
  return Math.max(1_000, Math.min(60_000, deadline - Date.now()));
}

/** A wait's deadline passed before the coordinator answered its first look (exit 6: what it waits for may still run). */
export class WaitTimedOut extends CliError {
  constructor(message: string) {
    super(message, EXIT.stillRunning);
    this.name = 'WaitTimedOut';
  }
}

/**
 * The wait for what a run started (its job, its batch), which exists and runs on whatever the wait
 * sees. When the wait ends before the coordinator answered its first look (an outage from the start,
 * then Ctrl-C or the deadline), `unseen` prints what the run answered (with `--json`, a script still
 * gets the id) and the command exits 6, as for any wait that ends while the job runs; not 130 with
 * nothing on standard output.
 */
export async function waitForStarted<T>(
  wait: Promise<T>,
  unseen: (ended: 'timeout' | 'interrupted') => void,
): Promise<T> {
  try {
    return await wait;
  } catch (error) {
    if (error instanceof Interrupted) {
      unseen('interrupted');
      throw new CliExit(EXIT.stillRunning);
    }
    if (error instanceof WaitTimedOut) unseen('timeout');
    throw error;
  }
}
