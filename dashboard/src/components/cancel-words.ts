import { CANCEL_UNCONFIRMED_MESSAGE } from '@drover/shared/job-messages';
import type { Schema } from '@drover/shared/api';

const OPEN = new Set(['pending', 'queued', 'running']);

/**
 * What became of a cancel, from the job as last read (so it also holds after a reload, and ends
 * when the job ends): null when nobody asked to cancel it. A running job whose agent never
 * confirmed the cancel was ended by the coordinator at the cancel's deadline: its agent may not
 * have stopped it (offline, or it lost the job), so the page does not say it did.
 */
export function cancelState(
  job: Pick<Schema<'Job'>, 'status' | 'cancelRequestedAt' | 'startedAt' | 'errorMessage'>,
): string | null {
  if (job.cancelRequestedAt === null) return null;
  if (OPEN.has(job.status))
    return 'Cancel requested: the agent is stopping the job; it ends cancelled when the agent confirms.';
  if (job.status !== 'cancelled') return `The job ended ${job.status.replace('_', ' ')} before it could be stopped.`;
  if (job.startedAt === null) return 'Cancelled: the job had not started.';
  if (job.errorMessage === CANCEL_UNCONFIRMED_MESSAGE)
    return "Cancelled without word from its agent: it did not confirm that it stopped the job by the cancel's deadline.";
  return 'Cancelled: its agent stopped the job.';
}
