import { useQuery } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { isFinished, jobQuery } from '../api/queries';
import { ErrorMessage } from '../components/ErrorMessage';
import { dateTime } from '../components/time';

/** A job (`/api/jobs/:id`, the `statusUrl` of a run): status, timing, params, output and log. */
export function JobPage() {
  const { jobId = '' } = useParams();
  const job = useQuery(jobQuery(jobId));
  if (job.error) return <ErrorMessage error={job.error} />;
  if (!job.data) return <p className="loading">Loading…</p>;
  const j = job.data;
  return (
    <section aria-labelledby="job-heading">
      <h1 id="job-heading">
        Job {j.workflowName} <span className={`status status-${j.status}`}>{j.status}</span>
      </h1>
      <dl className="facts">
        <dt>Id</dt>
        <dd>
          <code>{j.id}</code>
        </dd>
        <dt>Started by</dt>
        <dd>{j.source}</dd>
        <dt>Created</dt>
        <dd>{dateTime(j.createdAt)}</dd>
        {j.finishedAt && (
          <>
            <dt>Finished</dt>
            <dd>{dateTime(j.finishedAt)}</dd>
          </>
        )}
        {j.ref && (
          <>
            <dt>Ref</dt>
            <dd>{j.ref}</dd>
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
      <pre>{JSON.stringify(j.params, null, 2)}</pre>
      {j.output && (
        <>
          <h2>Output</h2>
          <pre>{JSON.stringify(j.output, null, 2)}</pre>
        </>
      )}
      <h2>Log{isFinished(j.status) ? '' : ' (updating)'}</h2>
      <pre className="log" tabIndex={0} aria-label="Job log">
        {j.logs.map((l) => `${l.at} ${l.stream} ${l.text}`).join('\n') || 'No log lines yet.'}
      </pre>
    </section>
  );
}
