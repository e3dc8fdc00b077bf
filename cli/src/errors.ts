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
