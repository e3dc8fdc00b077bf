import { DEFAULT_CANCEL_GRACE_MS } from '@drover/shared';

/** The error message of a job a user cancelled while it ran (the stopped step is named after it). */
export const CANCELLED_BY_USER_MESSAGE = 'cancelled: a user cancelled the job';

/**
 * How one job is stopped on purpose: a user's cancel (a `cancel` event of the stream) or the
 * agent's shutdown. `signal` is aborted by a cancel or by `kill` (aborted by the job manager when
 * the shutdown's grace is over, or at once for a job that has not started), with the reason that
 * becomes the job's error message; the executor stops the running step's process group with
 * SIGTERM, then SIGKILL after `graceMs()`: the workflow's `cancelGrace` (10 s by default) for a
 * cancel, the agent's kill grace for a shutdown. `beforeStart` is aborted as well as soon as the
 * shutdown begins: a job that has not started by then never starts, whatever moment of its start
 * the shutdown finds it in.
 */
export class JobStop {
  readonly signal: AbortSignal;
  readonly beforeStart: AbortSignal;
  readonly #cancel = new AbortController();
  readonly #killGraceMs: number;

  constructor(kill: AbortSignal, shutdown: AbortSignal, killGraceMs: number) {
    this.signal = AbortSignal.any([kill, this.#cancel.signal]);
    this.beforeStart = AbortSignal.any([this.signal, shutdown]);
    this.#killGraceMs = killGraceMs;
  }

  /** Stops the job because a user cancelled it (once; a shutdown already under way keeps its reason). */
  cancel(): void {
    this.#cancel.abort(CANCELLED_BY_USER_MESSAGE);
  }

  /** True once a user cancelled the job. */
  get cancelled(): boolean {
    return this.#cancel.signal.aborted;
  }

  /** Between SIGTERM and SIGKILL to a step stopped by `signal`, given the workflow's `cancelGrace`. */
  graceMs(cancelGraceMs: number | undefined): number {
    if (this.cancelled && this.signal.reason === CANCELLED_BY_USER_MESSAGE)
      return cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS;
    return this.#killGraceMs;
  }
}
