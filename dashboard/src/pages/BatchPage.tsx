import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { createContext, memo, useContext, useState, type ReactNode } from 'react';
import { Link, useParams } from 'react-router';
import {
  batchEnded,
  cancelBatch,
  liveBatchKey,
  liveBatchQuery,
  progressOf,
  type BatchDetail,
  type BatchJob,
} from '../api/batches';
import { JOB_SOURCES } from '../api/jobs';
import { triggerNamesOf, triggerNamesQuery } from '../api/triggers';
import { TriggerName } from '../components/TriggerName';
import { orgsQuery } from '../api/queries';
import { BatchProgress, endedWords } from '../components/BatchProgress';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { duration } from '../components/JobFacts';
import { dateTime } from '../components/time';
import { allows } from './use-org';
import { shortId } from '@drover/shared/short-id';

/**
 * A batch (`/api/batches/:id`, the `statusUrl` of a run on a label selector): its trigger,
 * workflow and selector, its jobs' progress, and one row per agent with its job; read again every
 * 2 seconds until every job ended. Any member may cancel it while a job is open.
 */
export function BatchPage() {
  const { batchId = '' } = useParams();
  // Another batch starts from a clean page: no confirmation left open.
  return <LiveBatch key={batchId} batchId={batchId} />;
}

function LiveBatch({ batchId }: { batchId: string }) {
  const batch = useQuery(liveBatchQuery(batchId));
  const triggers = useQuery(triggerNamesQuery(batch.data?.orgId ?? '', [batch.data?.triggerId]));
  if (batch.error && !batch.data) return <ErrorMessage error={batch.error} />;
  if (!batch.data) return <p className="loading">Loading…</p>;
  const b = batch.data;
  const ended = batchEnded(b);
  return (
    <section aria-labelledby="batch-heading">
      <p className="hint">
        <Link to={`/orgs/${b.orgId}/batches`}>All batches</Link>
      </p>
      <h1 id="batch-heading">
        Batch #{b.number} {b.workflowName} <span className={`status status-${b.status}`}>{b.status}</span>
      </h1>
      <ErrorMessage error={batch.error} />
      <BatchActions batch={b} />
      <dl className="facts">
        <Fact term="Trigger">
          <TriggerName id={b.triggerId} names={triggerNamesOf(triggers)} orgId={b.orgId} />
        </Fact>
        <Fact term="Workflow">{b.workflowName}</Fact>
        <Fact term="Selector">
          <code>{b.selector}</code>
        </Fact>
        <Fact term="Jobs">
          {b.jobCount}, one per agent the selector matched
          {b.maxParallel !== null && `; at most ${b.maxParallel} handed out at a time`}
        </Fact>
        <Fact term="Started by">{JOB_SOURCES[b.source] ?? b.source}</Fact>
        <Fact term="Created">
          <time dateTime={b.createdAt}>{dateTime(b.createdAt)}</time>
        </Fact>
        <Fact term="Ended">
          {b.endedAt ? <time dateTime={b.endedAt}>{dateTime(b.endedAt)}</time> : <span className="hint">not yet</span>}
        </Fact>
      </dl>
      <h2 id="batch-progress-heading">Progress</h2>
      <p className="hint">
        {endedWords(b)}.{' '}
        {ended ? 'Every job ended.' : 'The page reads the batch again every 2 seconds until every job ended.'}
      </p>
      <BatchProgress batch={b} />
      <h2 id="batch-jobs-heading">Jobs</h2>
      <BatchJobs batch={b} readAt={batch.dataUpdatedAt} />
      <p>
        <Link to={`/orgs/${b.orgId}/jobs?batchId=${encodeURIComponent(b.id)}`}>These jobs in the Jobs list</Link>
      </p>
    </section>
  );
}

function Fact({ term, children }: { term: string; children: ReactNode }) {
  return (
    <>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </>
  );
}

/** When the page read the batch last: what the running jobs' durations count to. */
const ReadAt = createContext(0);

/** One row per agent: its name (to its page), its job (to the job's page), how it went. */
function BatchJobs({ batch, readAt }: { batch: BatchDetail; readAt: number }) {
  return (
    <div className="table-scroll">
      <table className="jobs batch-jobs" aria-labelledby="batch-jobs-heading">
        <caption className="hint">One job per agent, by the agents&apos; names.</caption>
        <thead>
          <tr>
            <th scope="col">Agent</th>
            <th scope="col">Job</th>
            <th scope="col">Status</th>
            <th scope="col">Exit code</th>
            <th scope="col">Error</th>
            <th scope="col">Duration</th>
          </tr>
        </thead>
        <tbody>
          <ReadAt value={readAt}>
            {batch.jobs.map((job) => (
              <BatchJobRow key={job.jobId} orgId={batch.orgId} job={job} />
            ))}
          </ReadAt>
        </tbody>
      </table>
    </div>
  );
}

/**
 * A row is drawn again only when its job changed: each read of the batch keeps the jobs that did
 * not (the query's structural sharing), so a batch of thousands of agents redraws the rows that
 * changed and the running jobs' durations every 2 seconds, not every row.
 */
const BatchJobRow = memo(function BatchJobRow({ orgId, job }: { orgId: string; job: BatchJob }) {
  const agent = job.agentName ?? (job.agentId === null ? 'no agent' : shortId(job.agentId));
  return (
    <tr aria-label={agent}>
      <th scope="row">
        {job.agentId === null ? (
          <span className="hint">{agent}</span>
        ) : (
          <Link to={`/orgs/${orgId}/agents/${job.agentId}`}>{agent}</Link>
        )}
      </th>
      <td>
        <Link to={`/api/jobs/${job.jobId}`} aria-label={`Job #${job.number} on ${agent}`}>
          #{job.number}
        </Link>
      </td>
      <td>
        <span className={`status status-${job.status}`}>{job.status.replace('_', ' ')}</span>
      </td>
      <td>{job.exitCode ?? <span className="hint">none</span>}</td>
      <td>{job.errorMessage ?? ''}</td>
      <td>
        <JobDuration job={job} />
      </td>
    </tr>
  );
});

function JobDuration({ job }: { job: BatchJob }) {
  return duration(job, useContext(ReadAt)) ?? <span className="hint">not started</span>;
}

/**
 * Cancel (with a confirmation) while a job of the batch is open: every unfinished job is
 * cancelled, as a job's cancel does (running ones are stopped by their agents).
 */
function BatchActions({ batch }: { batch: BatchDetail }) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const opener = useReturnFocus(confirming);
  const cancel = useMutation({
    mutationFn: () => cancelBatch(batch.id),
    onSuccess: (answer) => {
      setConfirming(false);
      // The answer is the batch as the cancel left it: shown at once; polling goes on while a job runs.
      queryClient.setQueryData(liveBatchKey(batch.id), answer);
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: liveBatchKey(batch.id) }),
  });
  const orgs = useQuery(orgsQuery);
  if (
    batchEnded(batch) ||
    !allows(
      orgs.data?.find((o) => o.id === batch.orgId),
      'jobs.cancel',
    )
  ) {
    return <ErrorMessage error={cancel.error} />;
  }
  const { running, pending } = progressOf(batch.counts);
  const open = running + pending;
  return (
    <div className="job-actions">
      {!confirming && (
        <button type="button" ref={opener} onClick={() => setConfirming(true)}>
          Cancel batch
        </button>
      )}
      {confirming && (
        <Confirm label="Cancel the batch" onCancel={() => setConfirming(false)} className="confirm panel">
          <p>
            Cancel the {open} unfinished job{open === 1 ? '' : 's'} of this batch? A job that has not started never
            runs; a running one is stopped by its agent and ends <code>cancelled</code>. Jobs that ended keep their
            outcome.
          </p>
          <button type="button" className="danger" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
            Yes, cancel the batch
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Keep it running
          </button>
        </Confirm>
      )}
      <p role="status" className="hint">
        {cancel.isSuccess && running > 0
          ? running === 1
            ? 'Cancel requested: the running job ends cancelled once its agent has stopped it.'
            : `Cancel requested: the ${running} running jobs end cancelled once their agents have stopped them.`
          : null}
      </p>
      <ErrorMessage error={cancel.error} />
    </div>
  );
}
