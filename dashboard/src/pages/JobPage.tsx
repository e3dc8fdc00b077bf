import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { cancelJob, emailsOf, liveJobQuery, membersQuery, runAgain } from '../api/jobs';
import { isFinished } from '../api/queries';
import type { Job, JobDetail, JobLogLine, JobNotification } from '../api/types';
import { ErrorMessage } from '../components/ErrorMessage';
import { FileDownload } from '../components/FileDownload';
import { duration, JobStatus, startedBy } from '../components/JobFacts';
import { dateTime } from '../components/time';

/**
 * A job (`/api/jobs/:id`, the `statusUrl` of a run): status, timing, params, output, files and its
 * log, which grows live while the job runs; cancel it, or run its trigger again.
 */
export function JobPage() {
  const { jobId = '' } = useParams();
  // A new job (run again) starts from a clean page: no log, no confirmation left open.
  return <LiveJob key={jobId} jobId={jobId} />;
}

function LiveJob({ jobId }: { jobId: string }) {
  const queryClient = useQueryClient();
  const job = useQuery(liveJobQuery(jobId, queryClient));
  const members = useQuery({ ...membersQuery(job.data?.orgId ?? ''), enabled: job.data !== undefined });
  if (job.error && !job.data) return <ErrorMessage error={job.error} />;
  if (!job.data) return <p className="loading">Loading…</p>;
  const j = job.data;
  const emails = emailsOf(members.data);
  return (
    <section aria-labelledby="job-heading">
      <p className="hint">
        <Link to={`/orgs/${j.orgId}/jobs`}>All jobs</Link>
      </p>
      <h1 id="job-heading">
        Job #{j.number} {j.workflowName} <JobStatus job={j} />
      </h1>
      <ErrorMessage error={job.error} />
      <JobActions job={j} />
      <dl className="facts">
        <dt>Id</dt>
        <dd>
          <code>{j.id}</code>
        </dd>
        <dt>Started by</dt>
        <dd>{startedBy(j, emails)}</dd>
        {j.forced && (
          <>
            <dt>Forced</dt>
            <dd>past the workflow&apos;s limits: {j.forceReason}</dd>
          </>
        )}
        {j.ref && (
          <>
            <dt>Ref</dt>
            <dd>{j.ref}</dd>
          </>
        )}
        <Time label="Created" at={j.createdAt} />
        <Time label="Queued" at={j.queuedAt} />
        <Time label="Started" at={j.startedAt} />
        <Time label="Cancel requested" at={j.cancelRequestedAt} />
        <Time label="Finished" at={j.finishedAt} />
        {j.startedAt && (
          <>
            <dt>{j.finishedAt ? 'Ran for' : 'Running for'}</dt>
            <dd>{duration(j)}</dd>
          </>
        )}
        {j.exitCode !== null && (
          <>
            <dt>Exit code</dt>
            <dd>{j.exitCode}</dd>
          </>
        )}
        {j.errorMessage && (
          <>
            <dt>Error</dt>
            <dd>{j.errorMessage}</dd>
          </>
        )}
      </dl>
      <h2>Params</h2>
      <pre tabIndex={0} aria-label="Params">
        {JSON.stringify(j.params, null, 2)}
      </pre>
      {j.output && (
        <>
          <h2>Output</h2>
          <pre tabIndex={0} aria-label="Output">
            {JSON.stringify(j.output, null, 2)}
          </pre>
        </>
      )}
      <JobFiles job={j} />
      <JobNotifications job={j} />
      <JobLog job={j} />
    </section>
  );
}

const NOTIFICATION_STATUS: Record<string, string> = {
  pending: 'waiting to be sent',
  sending: 'being sent',
  sent: 'sent',
  failed: 'given up',
};

const MESSAGE_KINDS: Record<JobNotification['kind'], string> = {
  notification: 'notification to',
  reply: 'outcome told to the writer in',
  answer: 'answer to the mention in',
};

/**
 * The chat messages about the job (its trigger's notification; for a chat run, the answer and the
 * outcome told to its writer), with how each delivery went.
 */
function JobNotifications({ job }: { job: JobDetail }) {
  if (job.notifications.length === 0) return null;
  return (
    <>
      <h2>Chat messages</h2>
      <ul className="notifications" aria-label="Chat messages">
        {job.notifications.map((n) => (
          <li key={`${n.kind}:${n.provider}:${n.teamId}:${n.channelId}:${n.createdAt}`}>
            {n.provider === 'slack' ? 'Slack' : 'Discord'} {MESSAGE_KINDS[n.kind]} channel <code>{n.channelId}</code>:{' '}
            <strong>{NOTIFICATION_STATUS[n.status] ?? n.status}</strong>
            {n.sentAt && (
              <>
                {' '}
                at <time dateTime={n.sentAt}>{dateTime(n.sentAt)}</time>
              </>
            )}
            {n.attempts > 1 && ` after ${n.attempts} attempts`}
            {n.lastError && n.status !== 'sent' && <> ({n.lastError})</>}
          </li>
        ))}
      </ul>
    </>
  );
}

function Time({ label, at }: { label: string; at: string | null }) {
  if (!at) return null;
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <time dateTime={at}>{dateTime(at)}</time>
      </dd>
    </>
  );
}

/** The log, newest line last; it follows new lines while the reader is at its end. */
function JobLog({ job }: { job: JobDetail }) {
  const ref = useRef<HTMLPreElement>(null);
  const atEnd = useRef(true);
  useEffect(() => {
    const el = ref.current;
    if (el && atEnd.current) el.scrollTop = el.scrollHeight;
  }, [job.logs.length]);
  const running = !isFinished(job.status);
  return (
    <>
      <h2>Log{running ? ' (live)' : ''}</h2>
      <pre
        ref={ref}
        className="log"
        tabIndex={0}
        role="log"
        aria-label="Job log"
        onScroll={(e) => {
          const el = e.currentTarget;
          atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {job.logs.map(logLine).join('\n') || (running ? 'No log lines yet.' : 'The job wrote no log lines.')}
      </pre>
      <p className="hint">
        {job.logs.length} line{job.logs.length === 1 ? '' : 's'}
        {running ? '; new lines appear as the agent sends them.' : '.'}
      </p>
    </>
  );
}

const logLine = (l: JobLogLine): string =>
  `${new Date(l.at).toLocaleTimeString()} ${l.stream === 'stdout' ? '' : `[${l.stream}] `}${l.text}`;

interface FileRef {
  __type: 'FileRef';
  id: string;
}
const isFileRef = (v: unknown): v is FileRef =>
  typeof v === 'object' && v !== null && (v as { __type?: unknown }).__type === 'FileRef';

/**
 * Files given to the job (FileRef params) and files it returned (FileRef outputs), by id, each
 * with a download (a fresh URL from the organization's files at each click).
 */
function JobFiles({ job }: { job: Job }) {
  const files = [
    ...Object.entries(job.params).map(([name, v]) => ({ name, v, way: 'input' })),
    ...Object.entries(job.output ?? {}).map(([name, v]) => ({ name, v, way: 'output' })),
  ].filter((f): f is { name: string; v: FileRef; way: string } => isFileRef(f.v));
  if (files.length === 0) return null;
  return (
    <>
      <h2>Files</h2>
      <ul>
        {files.map((f) => (
          <li key={`${f.way}:${f.name}`}>
            {f.way} <strong>{f.name}</strong>: file <code>{f.v.id}</code>{' '}
            <FileDownload orgId={job.orgId} fileId={f.v.id} label={`Download the ${f.way} file ${f.name}`} />
          </li>
        ))}
      </ul>
    </>
  );
}

/** Cancel (with a confirmation) while the job is open; run its trigger again by hand. */
function JobActions({ job }: { job: JobDetail }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [confirming, setConfirming] = useState(false);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['jobs', job.id, 'live'] });
  const cancel = useMutation({
    mutationFn: () => cancelJob(job.id),
    onSuccess: () => {
      setConfirming(false);
      void refresh();
    },
    onError: () => void refresh(),
  });
  const again = useMutation({
    mutationFn: () => runAgain(job.orgId, job),
    onSuccess: (answer) => void navigate(`/api/jobs/${answer.jobId}`),
  });
  const open = !isFinished(job.status);
  const canRunAgain = job.kind === 'trigger' && job.triggerId !== null;
  return (
    <div className="job-actions">
      {open && !confirming && (
        <button type="button" onClick={() => setConfirming(true)} disabled={job.cancelRequestedAt !== null}>
          {job.cancelRequestedAt ? 'Cancel requested' : 'Cancel job'}
        </button>
      )}
      {confirming && (
        <div role="group" aria-label="Cancel the job" className="confirm panel">
          <p>
            Cancel this job? A job that has not started never runs; a running one is stopped by its agent (its steps get
            SIGTERM, then SIGKILL) and ends <code>cancelled</code>.
          </p>
          <button type="button" className="danger" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
            Yes, cancel the job
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Keep it running
          </button>
        </div>
      )}
      {canRunAgain && (
        <button type="button" onClick={() => again.mutate()} disabled={again.isPending}>
          {again.isPending ? 'Starting…' : 'Run again'}
        </button>
      )}
      <p role="status" className="hint">
        {cancel.data && cancel.data.status === 'cancelled' && 'Cancelled: the job had not started.'}
        {cancel.data &&
          cancel.data.status !== 'cancelled' &&
          'Cancel requested: the agent is stopping the job; it ends cancelled when the agent confirms.'}
      </p>
      <ErrorMessage error={cancel.error ?? again.error} />
    </div>
  );
}
