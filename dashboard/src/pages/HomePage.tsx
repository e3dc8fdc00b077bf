import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense, type ReactNode } from 'react';
import { Link } from 'react-router';
import {
  bucketEnd,
  jobsLink,
  OUTCOME_WORDS,
  OUTCOMES,
  OVERVIEW_HOURS,
  overviewQuery,
  type HourBucket,
  type Outcome,
  type Overview,
  type OverviewJob,
} from '../api/overview';
import type { AgentStatus } from '../api/types';
import { EnrollAgent } from '../components/EnrollAgent';
import { ErrorMessage } from '../components/ErrorMessage';
import { duration, JobStatus } from '../components/JobFacts';
import { ago, dateTime } from '../components/time';
import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';
import { shortId } from '@drover/shared/short-id';

/** The chart and its library (uPlot) load with the home page, not with every page's first load. */
const JobsChart = lazy(() => import('../components/JobsChart').then((m) => ({ default: m.JobsChart })));

/** The agents' statuses as the home page counts them, and the words of each. */
const AGENT_COUNTS: [AgentStatus, string][] = [
  ['connected', 'connected'],
  ['disconnected', 'disconnected'],
  ['pending', 'never connected'],
  ['revoked', 'revoked'],
];

/**
 * An organization's home: its first steps while it has no agent; else the fleet at a glance, from
 * one answer (`GET /orgs/:orgId/overview`) refreshed every few seconds: agents by status, the last
 * 24 hours' jobs by outcome (counts and a chart an hour at a time, with the same as a table), the
 * last failures, the running jobs, the rollouts in progress and the next cron runs. Every count
 * leads to the list it counts, filtered.
 */
export function HomePage() {
  const { orgId, org, loaded } = useOrg();
  const overview = useQuery(overviewQuery(orgId));
  if (loaded && !org) return <NotFoundPage />;
  if (!org || !overview.data)
    return overview.error ? <ErrorMessage error={overview.error} /> : <p className="loading">Loading…</p>;
  const o = overview.data;
  const { agents } = o;
  if (agents.connected + agents.disconnected + agents.pending === 0) {
    return <FirstRun orgId={orgId} orgName={org.name} canEnroll={allows(org, 'agents.enroll')} />;
  }
  return (
    <section aria-labelledby="home-heading" className="home">
      <h1 id="home-heading">{org.name}</h1>
      <ErrorMessage error={overview.error} />
      <AgentCounts orgId={orgId} agents={agents} />
      <JobCounts orgId={orgId} overview={o} />
      <div className="home-panels">
        <RecentFailures orgId={orgId} jobs={o.recentFailures} />
        <RunningJobs orgId={orgId} jobs={o.running} />
        <Rollouts orgId={orgId} rollouts={o.rollouts} />
        <NextCronRuns orgId={orgId} runs={o.nextCronRuns} />
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

/** A count with its words, leading to the list it counts (`to`), or plain when it has none to lead to. */
function Count(props: { n: number; words: string; to: string; tone?: string }) {
  return (
    <li className={`count${props.tone ? ` count-${props.tone}` : ''}`}>
      <Link to={props.to}>
        <strong>{props.n}</strong> {props.words}
      </Link>
    </li>
  );
}

function AgentCounts({ orgId, agents }: { orgId: string; agents: Overview['agents'] }) {
  return (
    <Panel id="agents-heading" title="Agents">
      <ul className="counts">
        {AGENT_COUNTS.map(([status, words]) => (
          <Count
            key={status}
            n={agents[status]}
            words={words}
            to={`/orgs/${orgId}/agents?status=${status}`}
            tone={status === 'connected' ? 'success' : status === 'disconnected' && agents[status] > 0 ? 'failed' : ''}
          />
        ))}
      </ul>
    </Panel>
  );
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function JobCounts({ orgId, overview }: { orgId: string; overview: Overview }) {
  const { buckets, total } = overview.jobs;
  const since = buckets[0]?.start ?? new Date().toISOString();
  const sums = Object.fromEntries(OUTCOMES.map((o) => [o, buckets.reduce((n, b) => n + b[o], 0)])) as Record<
    Outcome,
    number
  >;
  const running = overview.running.length;
  const summary = `Jobs created in the last ${OVERVIEW_HOURS} hours, an hour at a time: ${plural(total, 'job')}, ${OUTCOMES.map(
    (o) => `${sums[o]} ${OUTCOME_WORDS[o]}`,
  ).join(', ')}. The table below gives each hour.`;
  return (
    <Panel id="jobs-heading" title={`Jobs, last ${OVERVIEW_HOURS} hours`}>
      <ul className="counts">
        <Count n={total} words={total === 1 ? 'job' : 'jobs'} to={jobsLink(orgId, { createdAfter: since })} />
        {OUTCOMES.map((o) => (
          <Count
            key={o}
            n={sums[o]}
            words={OUTCOME_WORDS[o]}
            to={jobsLink(orgId, { status: o, createdAfter: since })}
            tone={o}
          />
        ))}
        <Count
          n={running}
          words={running >= 100 ? 'running (or more)' : 'running'}
          to={jobsLink(orgId, { status: 'running' })}
          tone="running"
        />
      </ul>
      <Suspense fallback={<div className="jobs-chart" role="img" aria-label={summary} />}>
        <JobsChart buckets={buckets} summary={summary} />
      </Suspense>
      <details className="chart-table">
        <summary>The jobs of each hour, as a table</summary>
        <HourTable orgId={orgId} buckets={buckets} />
      </details>
    </Panel>
  );
}

const hourFormat = new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: '2-digit', minute: '2-digit' });

/** The chart's counts as a table, newest hour first; each count leads to its jobs. */
function HourTable({ orgId, buckets }: { orgId: string; buckets: readonly HourBucket[] }) {
  return (
    <div className="table-scroll">
      <table className="hours">
        <caption className="hint">
          Jobs created in each hour (your time), by outcome; jobs still open are not counted.
        </caption>
        <thead>
          <tr>
            <th scope="col">Hour</th>
            {OUTCOMES.map((o) => (
              <th scope="col" key={o}>
                {OUTCOME_WORDS[o]}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {[...buckets].reverse().map((b) => (
            <tr key={b.start}>
              <th scope="row">
                <time dateTime={b.start}>{hourFormat.format(new Date(b.start))}</time>
              </th>
              {OUTCOMES.map((o) => (
                <td key={o}>
                  {b[o] === 0 ? (
                    <span className="hint">0</span>
                  ) : (
                    <Link
                      to={jobsLink(orgId, { status: o, createdAfter: b.start, createdBefore: bucketEnd(b) })}
                      aria-label={`${b[o]} ${OUTCOME_WORDS[o]} at ${hourFormat.format(new Date(b.start))}`}
                    >
                      {b[o]}
                    </Link>
                  )}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Jobs, newest first: number and workflow (linked), status, trigger, agent (linked), and `when`. */
function JobList({ orgId, jobs, when }: { orgId: string; jobs: OverviewJob[]; when: (job: OverviewJob) => ReactNode }) {
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
            {job.triggerId === null ? (
              'no trigger'
            ) : job.triggerName === null ? (
              'a deleted trigger'
            ) : (
              <Link to={`/orgs/${orgId}/triggers/${job.triggerId}`}>{job.triggerName}</Link>
            )}{' '}
            ·{' '}
            {job.agentId === null ? (
              'waiting for an agent'
            ) : (
              <Link to={`/orgs/${orgId}/agents/${job.agentId}`}>{job.agentName ?? shortId(job.agentId)}</Link>
            )}{' '}
            · {when(job)}
          </span>
        </li>
      ))}
    </ul>
  );
}

const at = (iso: string, words: string) => (
  <time dateTime={iso} title={dateTime(iso)}>
    {words}
  </time>
);

function RecentFailures({ orgId, jobs }: { orgId: string; jobs: OverviewJob[] }) {
  return (
    <Panel id="failures-heading" title="Recent failures">
      {jobs.length === 0 && <p>No job has failed or timed out.</p>}
      {jobs.length > 0 && (
        <JobList
          orgId={orgId}
          jobs={jobs}
          when={(job) => at(job.finishedAt ?? job.createdAt, `ended ${ago(job.finishedAt ?? job.createdAt)}`)}
        />
      )}
      <p className="hint">
        <Link to={jobsLink(orgId, { status: 'failed' })}>All failed jobs</Link> ·{' '}
        <Link to={jobsLink(orgId, { status: 'timed_out' })}>All timed-out jobs</Link>
      </p>
    </Panel>
  );
}

function RunningJobs({ orgId, jobs }: { orgId: string; jobs: OverviewJob[] }) {
  return (
    <Panel id="running-heading" title="Running jobs">
      {jobs.length === 0 && <p>No job is running.</p>}
      {jobs.length > 0 && (
        <JobList orgId={orgId} jobs={jobs.slice(0, 10)} when={(job) => `running for ${duration(job) ?? '—'}`} />
      )}
      <p className="hint">
        <Link to={jobsLink(orgId, { status: 'running' })}>All running jobs</Link>
      </p>
    </Panel>
  );
}

function Rollouts({ orgId, rollouts }: { orgId: string; rollouts: Overview['rollouts'] }) {
  return (
    <Panel id="rollouts-heading" title="Rollouts in progress">
      {rollouts.length === 0 && <p>No rollout is in progress.</p>}
      {rollouts.length > 0 && (
        <ul className="home-list">
          {rollouts.map((r) => (
            <li key={r.releaseId}>
              <Link to={`/orgs/${orgId}/apps/${r.applicationId}`}>
                {r.applicationSlug} {r.version}
              </Link>{' '}
              <span className={`status status-${r.status === 'running' ? 'running' : 'pending'}`}>
                {r.status === 'paused' && r.pausedReason === 'failure_threshold' ? 'paused by failures' : r.status}
              </span>
              <br />
              <span className="hint">
                {r.channel} · wave {r.currentWave + 1} of {r.waves.length} ({r.waves[r.currentWave]} % of{' '}
                {plural(r.deviceCount, 'device')}) · {at(r.createdAt, `started ${ago(r.createdAt)}`)}
              </span>
            </li>
          ))}
        </ul>
      )}
      <p className="hint">
        <Link to={`/orgs/${orgId}/apps`}>All applications</Link>
      </p>
    </Panel>
  );
}

function NextCronRuns({ orgId, runs }: { orgId: string; runs: Overview['nextCronRuns'] }) {
  return (
    <Panel id="cron-heading" title="Next scheduled runs">
      {runs.length === 0 && <p>No schedule is enabled.</p>}
      {runs.length > 0 && (
        <ul className="home-list">
          {runs.map((r) => (
            <li key={`${r.triggerId} ${r.at}`}>
              <Link to={`/orgs/${orgId}/triggers/${r.triggerId}`}>{r.name}</Link>{' '}
              <span className="hint">· {at(r.at, ago(r.at))}</span>
            </li>
          ))}
        </ul>
      )}
      <p className="hint">
        <Link to={`/orgs/${orgId}/triggers`}>All triggers</Link>
      </p>
    </Panel>
  );
}

function FirstRun({ orgId, orgName, canEnroll }: { orgId: string; orgName: string; canEnroll: boolean }) {
  return (
    <section aria-labelledby="welcome-heading">
      <h1 id="welcome-heading">Welcome to {orgName}</h1>
      <p>This organization has no agent yet. Agents are the machines that run your workflows. To get started:</p>
      <ol className="steps">
        <li>
          Enroll an agent on a machine:{' '}
          {canEnroll
            ? 'create an enrollment token below and run the command it shows.'
            : 'a member of the organization creates an enrollment token here and runs the command it shows.'}
        </li>
        <li>
          Add a workflow file (YAML) to the agent&apos;s <code>workflows/</code> folder; the agent reports it here.
        </li>
        <li>Create a trigger for the workflow, then run it by hand or with an API token.</li>
      </ol>
      {canEnroll && <EnrollAgent orgId={orgId} />}
    </section>
  );
}
