import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useEffect, useRef, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { cancelJob, emailsOf, liveJobQuery, loadMoreLogs, LOGS_PAGE, membersQuery, runAgain } from '../api/jobs';
import { appsQuery } from '../api/ota';
import { answerPage, triggerNamesOf, triggerNamesQuery } from '../api/triggers';
import { TriggerName } from '../components/TriggerName';
import { agentQuery, isFinished, orgsQuery } from '../api/queries';
import type { Job, JobDetail, JobLogLine, JobNotification } from '../api/types';
import { BatchName } from '../components/BatchName';
import { cancelState } from '../components/cancel-words';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { FileDownload } from '../components/FileDownload';
import { duration, JobStatus, startedBy } from '../components/JobFacts';
import { dateTime } from '../components/time';
import { allows } from './use-org';
import { shortId } from '@drover/shared/short-id';

/**
 * A job (`/api/jobs/:id`, the `statusUrl` of a run): status, its agent and trigger (or the release
 * an update job installs), timing, params, output, files and its log, read a page at a time and
 * followed live while the job runs; cancel it, or run its trigger again.
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
        <JobPlace job={j} />
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

/**
 * Where the job ran and what started it: its agent (to the Agents page), its trigger (to the
 * trigger's page) or, for an update job, the release it installs (to its application's page).
 * Names come from the organization's lists; an id stands in until they load, or when the agent or
 * trigger is gone.
 */
function JobPlace({ job }: { job: JobDetail }) {
  const orgId = job.orgId;
  const agentRead = useQuery({
    ...agentQuery(orgId, job.agentId ?? ''),
    enabled: job.agentId !== null,
    refetchInterval: false,
    retry: false,
  });
  const triggers = useQuery(triggerNamesQuery(orgId, [job.triggerId]));
  const apps = useQuery({ ...appsQuery(orgId), enabled: job.applicationId !== null });
  const agent = agentRead.data;
  const app = job.applicationId === null ? undefined : apps.data?.find((a) => a.id === job.applicationId);
  const release = job.kind === 'update' ? releaseOf(job.params) : null;
  return (
    <>
      <dt>Agent</dt>
      <dd>
        {job.agentId === null ? (
          <span className="hint">waiting for an agent</span>
        ) : (
          <Link to={`/orgs/${orgId}/agents`}>{agent?.name ?? <code>{shortId(job.agentId)}</code>}</Link>
        )}
        {agent?.status === 'revoked' && <span className="hint"> (revoked)</span>}
      </dd>
      {job.triggerId !== null && (
        <>
          <dt>Trigger</dt>
          <dd>
            <TriggerName id={job.triggerId} names={triggerNamesOf(triggers)} orgId={orgId} />
          </dd>
        </>
      )}
      {job.batchId !== null && (
        <>
          <dt>Batch</dt>
          <dd>
            Part of{' '}
            <Link to={`/api/batches/${job.batchId}`}>
              <BatchName batchId={job.batchId} />
            </Link>
            <span className="hint">: one job per agent its trigger&apos;s selector matched</span>
          </dd>
        </>
      )}
      {job.kind === 'update' && (
        <>
          <dt>Update</dt>
          <dd>
            {release ? (
              <>
                installs release <strong>{release.version}</strong> (channel {release.channel})
                {release.forced && ', forced'}
              </>
            ) : (
              'an update job'
            )}
            {job.applicationId !== null && (
              <>
                {' of '}
                <Link to={`/orgs/${orgId}/apps/${job.applicationId}`}>
                  {app?.slug ?? <code>{shortId(job.applicationId)}</code>}
                </Link>
              </>
            )}{' '}
            <span className="hint">(over-the-air update, workflow {job.workflowName})</span>
          </dd>
        </>
      )}
    </>
  );
}

/** The release an update job installs, from its params (`version`, `channel`, `forced`). */
function releaseOf(params: Record<string, unknown>): { version: string; channel: string; forced: boolean } | null {
  const { version, channel, forced } = params;
  if (typeof version !== 'string') return null;
  return { version, channel: typeof channel === 'string' ? channel : 'unknown', forced: forced === true };
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

/**
 * The log, newest line last, read a page at a time: more pages on request, new lines as they come
 * while the job runs; the view follows new lines while the reader is at its end.
 */
function JobLog({ job }: { job: JobDetail }) {
  const queryClient = useQueryClient();
  const ref = useRef<HTMLPreElement>(null);
  const atEnd = useRef(true);
  const more = useMutation({ mutationFn: () => loadMoreLogs(queryClient, job.id) });
  useEffect(() => {
    const el = ref.current;
    if (el && atEnd.current && !job.logsMore) el.scrollTop = el.scrollHeight;
  }, [job.logs.length, job.logsMore]);
  const running = !isFinished(job.status);
  const shown = job.logs.length;
  return (
    <>
      <h2>Log{running && !job.logsMore ? ' (live)' : ''}</h2>
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
        {job.logsMore
          ? `${shown.toLocaleString('en-US')} of ${count(Math.max(job.logsTotal, shown), 'line')} shown.`
          : `${count(shown, 'line')}${running ? '; new lines appear as the agent sends them.' : '.'}`}
        {job.logsDropped > 0 &&
          ` ${count(job.logsDropped, 'line')} from the middle of the log were not kept: it passed the coordinator's limit (one line says where).`}
      </p>
      {job.logsMore && (
        <button type="button" onClick={() => more.mutate()} disabled={more.isPending}>
          {more.isPending ? 'Loading…' : `Show the next ${LOGS_PAGE.toLocaleString('en-US')} lines`}
        </button>
      )}
      <ErrorMessage error={more.error} />
    </>
  );
}

const count = (n: number, noun: string) => `${n.toLocaleString('en-US')} ${noun}${n === 1 ? '' : 's'}`;

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
  const opener = useReturnFocus(confirming);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['jobs', job.id, 'live'] });
  const cancel = useMutation({
    mutationFn: () => cancelJob(job.id),
    onSuccess: (answer) => {
      setConfirming(false);
      // The answer is the job as the cancel left it: shown at once, its log kept.
      queryClient.setQueryData<JobDetail>(['jobs', job.id, 'live'], (shown) => shown && { ...shown, ...answer });
      void refresh();
    },
    onError: () => void refresh(),
  });
  const again = useMutation({
    mutationFn: () => runAgain(job.orgId, job),
  });
  const orgs = useQuery(orgsQuery);
  const org = orgs.data?.find((o) => o.id === job.orgId);
  const open = !isFinished(job.status) && allows(org, 'jobs.cancel');
  const canRunAgain = job.kind === 'trigger' && job.triggerId !== null && allows(org, 'triggers.run');
  return (
    <div className="job-actions">
      {open && !confirming && (
        <button
          type="button"
          ref={opener}
          onClick={() => setConfirming(true)}
          disabled={job.cancelRequestedAt !== null}
        >
          {job.cancelRequestedAt ? 'Cancel requested' : 'Cancel job'}
        </button>
      )}
      {confirming && (
        <Confirm label="Cancel the job" onCancel={() => setConfirming(false)} className="confirm panel">
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
        </Confirm>
      )}
      {canRunAgain && (
        <button
          type="button"
          onClick={() => again.mutate(undefined, { onSuccess: (answer) => void navigate(answerPage(answer)) })}
          disabled={again.isPending}
        >
          {again.isPending ? 'Starting…' : 'Run again'}
        </button>
      )}
      <p role="status" className="hint">
        {cancelState(job)}
      </p>
      <ErrorMessage error={cancel.error ?? again.error} />
    </div>
  );
}
