import { EXIT } from './exit-codes.js';

/**
 * A failure the command line reports in one line (`drover: <message>`) before exiting with
 * `exitCode` (2, a usage or API error, unless said otherwise).
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.usage,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CliError';
  }
}

/** The coordinator refused a call: its status, its error `code` and its one-line `message`. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string | null,
    message: string,
    /** The error body as the API sent it (parsed JSON, or the text). */
    readonly body: unknown,
    /** The seconds its `Retry-After` header asks to wait (a 429, a 503), or null. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    // A rate limit refused the call: "rejected" (3), everywhere.
    super(message, status === 429 ? EXIT.rejected : EXIT.usage);
    this.name = 'ApiError';
  }
}

/**
 * No answer came from the coordinator: the connection was refused or reset, or the answer did not
 * come in time. `code` is what failed (`ECONNREFUSED`, `UND_ERR_HEADERS_TIMEOUT`, ...).
 */
export class NoAnswer extends CliError {
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, EXIT.usage, options);
    this.name = 'NoAnswer';
  }

  /** Whether the answer did not come in time (rather than no connection at all). */
  get timedOut(): boolean {
    return TIMEOUT_CODES.has(this.code);
  }

  /** Whether it may pass: a coordinator restarting, a connection dropped, an answer late. */
  get temporary(): boolean {
    return TEMPORARY_CODES.has(this.code) || this.timedOut;
  }

  /**
   * Whether the call may have reached the coordinator: the connection was lost, or the answer was
   * late, once the request was on its way (not a connection that never opened: refused, no route,
   * no name, a certificate refused), so what it asked for may have been done.
   */
  get afterSending(): boolean {
    return AFTER_SENDING_CODES.has(this.code);
  }
}

const AFTER_SENDING_CODES = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);
const TEMPORARY_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

/** The process was asked to stop (SIGINT, SIGTERM) while the command worked. */
export class Interrupted extends CliError {
  constructor() {
    super('interrupted', EXIT.interrupted);
    this.name = 'Interrupted';
  }
}

/** Ends the command with this exit code after it printed what it had to say. */
export class CliExit extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
    this.name = 'CliExit';
  }
}
