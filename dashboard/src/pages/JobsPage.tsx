import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { type FormEvent } from 'react';
import { Link } from 'react-router';
import { emailsOf, JOB_FILTER_KEYS, JOB_SOURCES, JOB_STATUSES, jobsQuery, membersQuery } from '../api/jobs';
import { triggerNamesOf, triggerNamesQuery, type TriggerNames } from '../api/triggers';
import type { JobFilters } from '../api/jobs';
import { agentNamesQuery } from '../api/agent-pages';
import type { Job } from '../api/types';
import { ErrorMessage } from '../components/ErrorMessage';
import { duration, JobLeadCells } from '../components/JobFacts';
import { fromLocalInput, toLocalInput } from '../components/local-time';

import { AgentPicker } from '../components/AgentPicker';
import { TriggerPicker } from '../components/TriggerPicker';
import { TriggerName } from '../components/TriggerName';
import { BatchName } from '../components/BatchName';
import { NotFoundPage } from './NotFoundPage';
import { FilterButtons, useAddressFilters, useFilterDraft } from './use-draft';
import { useOrg } from './use-org';
import { ShowOlder } from '../components/ShowOlder';
import { shortId } from '@drover/shared/short-id';
import { Ago } from '../components/Ago';

/** The organization's trigger jobs, newest first, filtered by the address's search parameters. */
export function JobsPage() {
  const { orgId, org, loaded } = useOrg();
  const { filters, address, apply } = useAddressFilters(JOB_FILTER_KEYS);
  const jobs = useInfiniteQuery(jobsQuery(orgId, filters));
  const rows = jobs.data?.pages.flatMap((p) => p.items) ?? [];
  const agents = useQuery(agentNamesQuery(orgId, [...rows.map((job) => job.agentId), filters.agentId]));
  const triggers = useQuery(triggerNamesQuery(orgId, [...rows.map((job) => job.triggerId), filters.triggerId]));
  const members = useQuery(membersQuery(orgId));
  if (loaded && !org) return <NotFoundPage />;
  const names = {
    agents: agents.data ?? new Map<string, string>(),
    triggers: triggerNamesOf(triggers),
    emails: emailsOf(members.data),
  };
  return (
    <section aria-labelledby="jobs-heading">
      <h1 id="jobs-heading">Jobs</h1>
      {filters.batchId && (
        <p role="status">
          Only the jobs of{' '}
          <Link to={`/api/batches/${filters.batchId}`}>
            <BatchName batchId={filters.batchId} />
          </Link>
          . <Link to={`/orgs/${orgId}/jobs`}>All jobs</Link>
        </p>
      )}
      <JobFiltersForm
        address={address}
        filters={filters}
        orgId={orgId}
        agentNames={names.agents}
        triggerNames={triggers.data ?? new Map<string, string>()}
        onApply={apply}
      />
      <ErrorMessage error={jobs.error} />
      {jobs.data && rows.length === 0 && (
        <p>
          {Object.keys(filters).length ? 'No job matches these filters.' : 'No job has run in this organization yet.'}
        </p>
      )}
      {rows.length > 0 && (
        <div className="table-scroll">
          <table className="jobs">
            <caption className="hint">Newest first; the list refreshes every few seconds.</caption>
            <thead>
              <tr>
                <th scope="col">Workflow</th>
                <th scope="col">Status</th>
                <th scope="col">Started by</th>
                <th scope="col">Trigger</th>
                <th scope="col">Agent</th>
                <th scope="col">Created</th>
                <th scope="col">Duration</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((job) => (
                <JobRow key={job.id} job={job} names={names} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!jobs.data && !jobs.error && <p className="loading">Loading…</p>}
      <ShowOlder pages={jobs} what="jobs" />
    </section>
  );
}

type Names = {
  agents: Map<string, string>;
  triggers: TriggerNames | undefined;
  emails: Map<string, string> | undefined;
};

function JobRow({ job, names }: { job: Job; names: Names }) {
  return (
    <tr>
      <JobLeadCells job={job} emails={names.emails} />
      <td className="name">{job.triggerId ? <TriggerName id={job.triggerId} names={names.triggers} /> : '—'}</td>
      <td className="name">
        {job.agentId === null ? (
          <span className="hint">waiting for an agent</span>
        ) : (
          (names.agents.get(job.agentId) ?? <span className="hint">{shortId(job.agentId)}</span>)
        )}
      </td>
      <td>
        <Ago at={job.createdAt} />
      </td>
      <td>{duration(job) ?? <span className="hint">not started</span>}</td>
    </tr>
  );
}

/** The filter form's fields, from the address's filters (empty: any). */
const jobFields = (filters: JobFilters) => ({
  status: filters.status ?? '',
  source: filters.source ?? '',
  agentId: filters.agentId ?? '',
  triggerId: filters.triggerId ?? '',
  after: toLocalInput(filters.createdAfter),
  before: toLocalInput(filters.createdBefore),
});

function JobFiltersForm(props: {
  /** The address's search, which the fields start over from when it changes. */
  address: string;
  filters: JobFilters;
  orgId: string;
  /** The names of the agents known (that of the chosen one among them, once read). */
  agentNames: Map<string, string>;
  /** The names of the triggers known (that of the chosen one among them, once read). */
  triggerNames: Map<string, string>;
  onApply: (filters: JobFilters) => string;
}) {
  const { filters } = props;
  const { draft, setDraft, set, apply, clear } = useFilterDraft(jobFields, filters, props.address, props.onApply);
  const { status, source, agentId, triggerId, after, before } = draft;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    apply({
      // Kept: the form has no input for it (the batch's page links here with it).
      batchId: filters.batchId,
      status,
      source,
      agentId,
      triggerId,
      createdAfter: fromLocalInput(after),
      createdBefore: fromLocalInput(before),
    });
  };
  return (
    <form onSubmit={submit} className="inline-form filters" aria-label="Filter jobs">
      <label>
        Status
        <select value={status} onChange={set('status')}>
          <option value="">any</option>
          {JOB_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s.replace('_', ' ')}
            </option>
          ))}
        </select>
      </label>
      <label>
        Source
        <select value={source} onChange={set('source')}>
          <option value="">any</option>
          {Object.entries(JOB_SOURCES)
            .filter(([value]) => value !== 'ota')
            .map(([value, words]) => (
              <option key={value} value={value}>
                {words}
              </option>
            ))}
        </select>
      </label>
      <TriggerPicker
        orgId={props.orgId}
        value={triggerId}
        valueName={props.triggerNames.get(triggerId)}
        onChange={(id) => setDraft((fields) => ({ ...fields, triggerId: id }))}
        none="any"
      />
      <AgentPicker
        orgId={props.orgId}
        value={agentId}
        valueName={props.agentNames.get(agentId)}
        onChange={(id) => setDraft((fields) => ({ ...fields, agentId: id }))}
        none="any"
      />
      <label>
        Created from
        <input type="datetime-local" value={after} onChange={set('after')} />
      </label>
      <label>
        Created before
        <input type="datetime-local" value={before} onChange={set('before')} />
      </label>
      <FilterButtons onClear={clear} />
    </form>
  );
}
