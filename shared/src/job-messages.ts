/**
 * The error message of a running job whose cancel its agent did not confirm by the cancel's
 * deadline: the coordinator's sweep ended it `cancelled` without word from the agent
 * (docs/jobs.md, "Cancellation"). The dashboard tells it from a job its agent stopped by it.
 */
export const CANCEL_UNCONFIRMED_MESSAGE =
  "cancelled: a user cancelled the job, and its agent did not confirm that it stopped before the cancel's deadline";
