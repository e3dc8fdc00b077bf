import { Link } from 'react-router';
import { JOB_SOURCES } from '../api/jobs';
import type { Job } from '../api/types';

/** "12.3 s", "4 min 05 s": how long a job ran, or has been running until `now`. */
export function duration(job: Pick<Job, 'startedAt' | 'finishedAt'>, now = Date.now()): string | null {
  if (!job.startedAt) return null;
  const end = job.finishedAt ? new Date(job.finishedAt).getTime() : now;
  const ms = Math.max(0, end - new Date(job.startedAt).getTime());
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.floor((ms % 60_000) / 1000);
  if (minutes < 60) return `${minutes} min ${String(seconds).padStart(2, '0')} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/**
 * "run by hand by ada@example.com", "schedule", "API call, API token of ada@example.com", "Slack, by
 * ada in channel C0DEPLOYS". While the members are still loading (`emails` undefined) it names only
 * the source, rather than flashing the user's id; a user no longer a member is named by id.
 */
export function startedBy(job: Job, emails: Map<string, string> | undefined): string {
  const what = JOB_SOURCES[job.source] ?? job.source;
  if (job.chatOrigin) return `${what}, by ${job.chatOrigin.userName} in channel ${job.chatOrigin.channelId}`;
  if (!job.userId || !emails) return what;
  const who = emails.get(job.userId) ?? `user ${job.userId}`;
  if (job.source === 'webhook') return `${what}, API token of ${who}`;
  return `${what} by ${who}`;
}

/** A job's status with its words; a running job asked to stop says so. */
export function JobStatus({ job }: { job: Job }) {
  const stopping = job.status === 'running' && job.cancelRequestedAt !== null;
  return (
    <span className={`status status-${job.status}`}>
      {job.status.replace('_', ' ')}
      {stopping && ' (cancel requested)'}
    </span>
  );
}

/**
 * The cells a row of jobs starts with, in the jobs list and a trigger's recent jobs: the job's number
 * and workflow (linked) with its ref as the row's header, its status, who or what started it.
 */
export function JobLeadCells({ job, emails }: { job: Job; emails: Map<string, string> | undefined }) {
  return (
    <>
      <th scope="row">
        <Link to={`/api/jobs/${job.id}`}>
          #{job.number} {job.workflowName}
        </Link>
        {job.ref && <span className="hint"> @ {job.ref}</span>}
      </th>
      <td>
        <JobStatus job={job} />
      </td>
      <td>{startedBy(job, emails)}</td>
    </>
  );
}
