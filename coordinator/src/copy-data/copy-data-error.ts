/** `refused`: nothing was written, the input is wrong (exit status 2); `failed`: nothing was committed (1). */
export class CopyDataError extends Error {
  constructor(
    readonly code: 'refused' | 'failed',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CopyDataError';
  }
}
