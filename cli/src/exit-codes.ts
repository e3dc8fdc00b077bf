import type { JobStatus } from '@drover/shared';

/**
 * The exit codes of every `drover` command (docs/cli.md, "Exit codes"): the same for a run, a
 * wait, a file transfer or a management call.
 */
export const EXIT = {
  /** Done; a job that was waited for succeeded. */
  success: 0,
  /** The job failed. */
  failed: 1,
  /** A usage error, or the API refused the call (bad token, unknown trigger, 422, ...). */
  usage: 2,
  /** Rejected: a rate limit (429) or the agent's full queue. */
  rejected: 3,
  /** The job timed out. */
  timedOut: 4,
  /** The job was cancelled. */
  cancelled: 5,
  /** The wait ended while the job still runs. */
  stillRunning: 6,
  /** Interrupted (SIGINT, SIGTERM) outside a wait. */
  interrupted: 130,
  /**
   * Whoever read stdout or stderr went away (EPIPE: `drover job <id> --logs | head -1`): stopped
   * quietly, with the code of a Unix tool that SIGPIPE ended (128 + 13).
   */
  brokenPipe: 141,
} as const;

/**
 * The exit code that a job's status means once it was waited for; 2 for a status this command
 * line does not know (a newer coordinator's, or none), never 0.
 */
export function exitCodeOfStatus(status: JobStatus): number {
  switch (status) {
    case 'success':
      return EXIT.success;
    case 'failed':
      return EXIT.failed;
    case 'rejected':
      return EXIT.rejected;
    case 'timed_out':
      return EXIT.timedOut;
    case 'cancelled':
      return EXIT.cancelled;
    case 'pending':
    case 'queued':
    case 'running':
      return EXIT.stillRunning;
    default:
      return EXIT.usage;
  }
}
