import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { jobsInStatusQuery, triggerNamesQuery } from '../api/jobs';
import { agentsQuery } from '../api/queries';
import type { Agent, Job } from '../api/types';
import { EnrollAgent } from '../components/EnrollAgent';
import { ErrorMessage } from '../components/ErrorMessage';
import { duration, JobStatus } from '../components/JobFacts';
import { ago, dateTime } from '../components/time';
import { NotFoundPage } from './NotFoundPage';
import { useOrg } from './use-org';

/** How many jobs each list of the home page shows; its link leads to all of them. */
const SHOWN = 5;

/**
 * An organization's home: what to do first when it has no agent; else where things stand, from
 * the lists the other pages read: the newest failed and timed-out jobs, the running jobs, and the
 * agents that lost their connection, each linked to the page that lists them all.
 */
export function HomePage() {
  const { orgId, org, loaded } = useOrg();
  const agents = useQuery(agentsQuery(orgId));
  if (loaded && !org) return <NotFoundPage />;
  if (!org || !agents.data)
    return agents.error ? <ErrorMessage error={agents.error} /> : <p className="loading">Loading…</p>;
  const live = agents.data.filter((a) => a.status !== 'revoked');
  if (live.length === 0) return <FirstRun orgId={orgId} orgName={org.name} />;
  const connected = live.filter((a) => a.status === 'connected').length;
  return (
    <section aria-labelledby="home-heading">
      <h1 id="home-heading">{org.name}</h1>
      <p>
        {connected} of {live.length} agent{live.length === 1 ? '' : 's'} connected.{' '}
        <Link to={`/orgs/${orgId}/agents`}>See the agents</Link>.
      </p>
      <div className="home-panels">
        <RecentFailures orgId={orgId} agents={agents.data} />
        <RunningJobs orgId={orgId} agents={agents.data} />
        <AgentsOffline orgId={orgId} agents={live} />
      </div>
    </section>
  );
}

function Panel({ id, title, children }: { id: string; title: string; children: ReactNode }) {
  return (
    <section aria-labelledby={id} className="panel">
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** The jobs of a list, newest first: number and workflow (linked), status, trigger, agent, and `when`. */
function JobList(props: { orgId: string; jobs: Job[]; agents: Agent[]; when: (job: Job) => ReactNode }) {
  const { orgId, jobs, agents, when } = props;
  const triggers = useQuery(triggerNamesQuery(orgId));
  const agentName = new Map(agents.map((a) => [a.id, a.name]));
  const triggerName = new Map((triggers.data ?? []).map((t) => [t.id, t.name]));
  return (
    <ul className="home-list">
      {jobs.map((job) => (
        <li key={job.id}>
          <Link to={`/api/jobs/${job.id}`}>
            #{job.number} {job.workflowName}
          </Link>{' '}
          <JobStatus job={job} />
          <br />
          <span className="hint">
            {job.triggerId ? (triggerName.get(job.triggerId) ?? 'a deleted trigger') : 'no trigger'} ·{' '}
            {job.agentId === null ? 'waiting for an agent' : (agentName.get(job.agentId) ?? job.agentId.slice(0, 8))} ·{' '}
            {when(job)}
          </span>
        </li>
      ))}
    </ul>
  );
}

const endedAgo = (job: Job) => {
  const at = job.finishedAt ?? job.createdAt;
  return (
    <time dateTime={at} title={dateTime(at)}>
      {ago(at)}
    </time>
  );
};

/** The newest failed and timed-out jobs, merged newest first. */
function RecentFailures({ orgId, agents }: { orgId: string; agents: Agent[] }) {
  const failed = useQuery(jobsInStatusQuery(orgId, 'failed', SHOWN));
  const timedOut = useQuery(jobsInStatusQuery(orgId, 'timed_out', SHOWN));
  const error = failed.error ?? timedOut.error;
  const jobs =
    failed.data && timedOut.data
      ? [...failed.data, ...timedOut.data].sort((a, b) => b.number - a.number).slice(0, SHOWN)
      : undefined;
  return (
    <Panel id="failures-heading" title="Recent failures">
      <ErrorMessage error={error} />
      {!jobs && !error && <p className="loading">Loading…</p>}
      {jobs && jobs.length === 0 && <p>No job has failed or timed out.</p>}
      {jobs && jobs.length > 0 && <JobList orgId={orgId} jobs={jobs} agents={agents} when={endedAgo} />}
      <p className="hint">
        <Link to={`/orgs/${orgId}/jobs?status=failed`}>All failed jobs</Link> ·{' '}
        <Link to={`/orgs/${orgId}/jobs?status=timed_out`}>All timed-out jobs</Link>
      </p>
    </Panel>
  );
}

function RunningJobs({ orgId, agents }: { orgId: string; agents: Agent[] }) {
  const running = useQuery(jobsInStatusQuery(orgId, 'running', SHOWN));
  const jobs = running.data;
  return (
    <Panel id="running-heading" title="Running jobs">
      <ErrorMessage error={running.error} />
      {!jobs && !running.error && <p className="loading">Loading…</p>}
      {jobs && jobs.length === 0 && <p>No job is running.</p>}
      {jobs && jobs.length > 0 && (
        <JobList orgId={orgId} jobs={jobs} agents={agents} when={(job) => `running for ${duration(job) ?? '—'}`} />
      )}
      <p className="hint">
        <Link to={`/orgs/${orgId}/jobs?status=running`}>All running jobs</Link>
      </p>
    </Panel>
  );
}

/** Agents whose connection dropped (`disconnected`): they run nothing until they are back. */
function AgentsOffline({ orgId, agents }: { orgId: string; agents: Agent[] }) {
  const offline = agents.filter((a) => a.status === 'disconnected');
  return (
    <Panel id="offline-heading" title="Agents offline">
      {offline.length === 0 && <p>No agent is offline.</p>}
      {offline.length > 0 && (
        <ul className="home-list">
          {offline.map((a) => (
            <li key={a.id}>
              <strong>{a.name}</strong> <span className="status status-disconnected">disconnected</span>
              <br />
              <span className="hint">
                {a.hostname} ·{' '}
                {a.lastSeenAt ? (
                  <time dateTime={a.lastSeenAt} title={dateTime(a.lastSeenAt)}>
                    last seen {ago(a.lastSeenAt)}
                  </time>
                ) : (
                  'never seen'
                )}
              </span>
            </li>
          ))}
        </ul>
      )}
      <p className="hint">
        <Link to={`/orgs/${orgId}/agents`}>All agents</Link>
      </p>
    </Panel>
  );
}

function FirstRun({ orgId, orgName }: { orgId: string; orgName: string }) {
  return (
    <section aria-labelledby="welcome-heading">
      <h1 id="welcome-heading">Welcome to {orgName}</h1>
      <p>This organization has no agent yet. Agents are the machines that run your workflows. To get started:</p>
      <ol className="steps">
        <li>Enroll an agent on a machine: create an enrollment token below and run the command it shows.</li>
        <li>
          Add a workflow file (YAML) to the agent&apos;s <code>workflows/</code> folder; the agent reports it here.
        </li>
        <li>Create a trigger for the workflow, then run it by hand or with an API token.</li>
      </ol>
      <EnrollAgent orgId={orgId} />
    </section>
  );
}
