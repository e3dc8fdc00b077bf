import { TransferAborted, TransferError } from '@drover/agent/client';
import { CliError, Interrupted } from '../errors.js';

/** A transfer's failure as the command reports it: an interruption, or one line. */
export function transferFailure(error: unknown): unknown {
  if (error instanceof TransferAborted) return new Interrupted();
  if (error instanceof TransferError) return new CliError(error.message, undefined, { cause: error });
  return error;
}
