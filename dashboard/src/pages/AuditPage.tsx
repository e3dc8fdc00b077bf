import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { type FormEvent, type ReactNode } from 'react';
import { Link } from 'react-router';
import { AUDIT_FILTER_KEYS, auditQuery, tokenNamesQuery, type AuditEntry, type AuditFilters } from '../api/audit';
import { ACTOR_TYPES, AUDIT_ACTIONS, SELF_TARGETED, TARGET_TYPES } from '../api/audit-words';
import { emailsOf, membersQuery } from '../api/jobs';
import { triggerNamesOf, triggerNamesQuery, type TriggerNames } from '../api/triggers';
import { agentNamesQuery } from '../api/agent-pages';
import { ErrorMessage } from '../components/ErrorMessage';
import { fromLocalInput, toLocalInput } from '../components/local-time';

import { NotFoundPage } from './NotFoundPage';
import { FilterButtons, useAddressFilters, useFilterDraft } from './use-draft';
import { allows, useOrg } from './use-org';
import { ShowOlder } from '../components/ShowOlder';
import { shortId } from '@drover/shared/short-id';
import { Ago } from '../components/Ago';

/** The organization's audit log (owners only), newest first, filtered by the address's search parameters. */
export function AuditPage() {
  const { orgId, org, loaded } = useOrg();
  const { search, filters, address, apply } = useAddressFilters(AUDIT_FILTER_KEYS);
  const mayManage = allows(org, 'audit.read');
  const entries = useInfiniteQuery(auditQuery(orgId, filters, mayManage));
  const agentIds = (entries.data?.pages ?? []).flatMap((p) => p.items.flatMap(agentIdsOf));
  const agents = useQuery({ ...agentNamesQuery(orgId, agentIds), refetchInterval: false });
  const triggerIds = (entries.data?.pages ?? []).flatMap((p) =>
    p.items.flatMap((entry) => (entry.targetType === 'trigger' && entry.targetId ? [entry.targetId] : [])),
  );
  const triggers = useQuery({ ...triggerNamesQuery(orgId, triggerIds), refetchInterval: false });
  const members = useQuery({ ...membersQuery(orgId), enabled: mayManage });
  const tokens = useQuery(tokenNamesQuery(orgId, mayManage));
  if (loaded && !org) return <NotFoundPage />;
  if (!loaded) return <p className="loading">Loading…</p>;
  if (!mayManage) {
    return (
      <section aria-labelledby="audit-heading">
        <h1 id="audit-heading">Audit log</h1>
        <p>Owners only: the audit log is for the organization&apos;s owners. Ask an owner if you need an entry.</p>
      </section>
    );
  }
  const names: Names = {
    orgId,
    agents: agents.data ?? new Map<string, string>(),
    triggers: triggerNamesOf(triggers),
    emails: emailsOf(members.data),
    tokens: new Map((tokens.data ?? []).map((tk) => [tk.id, tk.name])),
    // The address of the same filters with only this actor's entries.
    onlyBy: (id) => {
      const params = new URLSearchParams(search);
      params.set('actorId', id);
      return `?${params.toString()}`;
    },
  };
  const rows = entries.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <section aria-labelledby="audit-heading">
      <h1 id="audit-heading">Audit log</h1>
      <AuditFiltersForm
        address={address}
        filters={filters}
        onApply={apply}
        actorName={filters.actorId ? actorName(filters.actorId, names) : undefined}
      />
      <ErrorMessage error={entries.error} />
      {entries.data && rows.length === 0 && (
        <p>{Object.keys(filters).length ? 'No entry matches these filters.' : 'The audit log is empty.'}</p>
      )}
      {rows.length > 0 && (
        <div className="table-scroll">
          <table className="jobs audit">
            <caption className="hint">Newest first.</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">What happened</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((entry) => (
                <AuditRow key={entry.id} entry={entry} names={names} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!entries.data && !entries.error && <p className="loading">Loading…</p>}
      <ShowOlder pages={entries} what="entries" />
    </section>
  );
}

interface Names {
  orgId: string;
  agents: Map<string, string>;
  triggers: TriggerNames | undefined;
  emails: Map<string, string> | undefined;
  tokens: Map<string, string>;
  onlyBy: (actorId: string) => string;
}

/** An actor by the name the page knows it by (a member's email, a token's or an agent's name), else its id's end. */
function actorName(id: string, names: Names): string {
  return names.emails?.get(id) ?? names.tokens.get(id) ?? names.agents.get(id) ?? shortId(id);
}

/** An actor's name as a link to only their entries. */
function byActor(id: string, name: string, names: Names): ReactNode {
  return (
    <Link to={{ search: names.onlyBy(id) }} title={`Only the entries by ${name}`}>
      {name}
    </Link>
  );
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value ? value : undefined);
/**
 * A job by its number (`#42`) when the entry has it, else by the end of its id (`…9f3c2a1b`): a job
 * id begins with its creation time, the same for every job of the same minute.
 */
const jobLabel = (id: string, number?: unknown) => (typeof number === 'number' ? `#${number}` : shortId(id));
/** Metadata keys that hold a job id, each shown as a link to the job. */
const JOB_ID_KEYS = new Set(['jobId', 'activeJobId', 'cancelledJobId']);

/** The agents an entry names: its actor, its target, a device's agent. */
function agentIdsOf(entry: AuditEntry): (string | null | undefined)[] {
  return [
    entry.actorType === 'agent' ? entry.actorId : null,
    entry.targetType === 'agent' ? entry.targetId : null,
    entry.targetType === 'device_binding' ? text(entry.metadata.agentId) : null,
  ];
}

/** Who acted: a member's email, an API token's name, an agent's name, or the coordinator. */
function actor(entry: AuditEntry, names: Names): ReactNode {
  const id = entry.actorId;
  switch (entry.actorType) {
    case 'user':
      if (!id) return 'a member';
      // While the members load, the id; once loaded, an id none has is a member who left.
      return byActor(
        id,
        names.emails ? (names.emails.get(id) ?? `a former member (${shortId(id)})`) : shortId(id),
        names,
      );
    case 'api_token':
      if (!id) return 'API token';
      return <>API token {byActor(id, names.tokens.get(id) ?? shortId(id), names)}</>;
    case 'agent': {
      const name = id ? names.agents.get(id) : undefined;
      if (name)
        return (
          <>
            agent <Link to={`/orgs/${names.orgId}/agents`}>{name}</Link>
          </>
        );
      return `agent ${id ? shortId(id) : ''}`.trim();
    }
    default:
      return 'The coordinator';
  }
}

/** The target in words, linked to its page when the dashboard has one. */
function target(entry: AuditEntry, names: Names): ReactNode {
  const { targetType: type, targetId: id, metadata } = entry;
  if (!type || !id) return null;
  const named = text(metadata.name) ?? text(metadata.email) ?? text(metadata.slug);
  switch (type) {
    case 'trigger': {
      const current = names.triggers?.names.get(id);
      if (current) return <Link to={`/orgs/${names.orgId}/triggers/${id}`}>{current}</Link>;
      return names.triggers?.complete ? <>{named ?? shortId(id)} (deleted)</> : (named ?? shortId(id));
    }
    case 'job': {
      const workflow = text(metadata.workflowName);
      const label = jobLabel(id, metadata.jobNumber);
      return <Link to={`/api/jobs/${id}`}>{workflow ? `${workflow} ${label}` : label}</Link>;
    }
    case 'batch': {
      const workflow = text(metadata.workflowName);
      const label = jobLabel(id, metadata.batchNumber);
      return <Link to={`/api/batches/${id}`}>{workflow ? `${workflow} ${label}` : label}</Link>;
    }
    case 'device_binding': {
      // A device is an agent bound to an application: named by the agent, linked to the application.
      const agentId = text(metadata.agentId);
      const name = agentId ? (names.agents.get(agentId) ?? `agent ${shortId(agentId)}`) : shortId(id);
      const appId = text(metadata.applicationId);
      return appId ? <Link to={`/orgs/${names.orgId}/apps/${appId}`}>{name}</Link> : name;
    }
    case 'agent': {
      const name = names.agents.get(id);
      return name ? <Link to={`/orgs/${names.orgId}/agents`}>{name}</Link> : (named ?? shortId(id));
    }
    case 'org':
      return <Link to={`/orgs/${id}`}>{named ?? shortId(id)}</Link>;
    case 'application':
      return <Link to={`/orgs/${names.orgId}/apps/${id}`}>{named ?? shortId(id)}</Link>;
    case 'release': {
      const appId = text(metadata.applicationId);
      const version = text(metadata.version) ?? shortId(id);
      return appId ? <Link to={`/orgs/${names.orgId}/apps/${appId}`}>{version}</Link> : version;
    }
    case 'storage_binding':
      return <Link to={`/orgs/${names.orgId}/storage`}>{named ?? shortId(id)}</Link>;
    case 'user': {
      const email = names.emails?.get(id);
      return email ? <Link to={`/orgs/${names.orgId}/members`}>{email}</Link> : (named ?? shortId(id));
    }
    case 'api_token': {
      const name = names.tokens.get(id) ?? named ?? shortId(id);
      return <Link to={`/orgs/${names.orgId}/api-tokens`}>{name}</Link>;
    }
    case 'chat_integration':
      return <Link to={`/orgs/${names.orgId}/integrations`}>{text(metadata.teamName) ?? shortId(id)}</Link>;
    default:
      return named ?? (type === 'address' ? id : shortId(id));
  }
}

function AuditRow({ entry, names }: { entry: AuditEntry; names: Names }) {
  const what = AUDIT_ACTIONS[entry.action] ?? entry.action;
  const self = SELF_TARGETED.has(entry.action) || (entry.actorId !== null && entry.actorId === entry.targetId);
  const about = self ? null : target(entry, names);
  return (
    <tr>
      <td>
        <Ago at={entry.createdAt} />
      </td>
      <th scope="row">
        <span className="audit-who">{actor(entry, names)}</span> {what}
        {about && (
          <>
            {' '}
            the {TARGET_TYPES[entry.targetType ?? ''] ?? entry.targetType} {about}
          </>
        )}
        <div className="hint">
          <code>{entry.action}</code>
        </div>
      </th>
      <td>
        <Metadata metadata={entry.metadata} />
      </td>
    </tr>
  );
}

/** The entry's details, one per line; a job id links to the job (its number is in the link). */
function Metadata({ metadata }: { metadata: Record<string, unknown> }) {
  const keys = Object.keys(metadata).filter((key) => key !== 'jobNumber');
  if (keys.length === 0) return <span className="hint">—</span>;
  return (
    <dl className="audit-metadata">
      {keys.map((key) => {
        const value = metadata[key];
        return (
          <div key={key}>
            <dt>{key}</dt>
            <dd>
              {JOB_ID_KEYS.has(key) && typeof value === 'string' ? (
                <Link to={`/api/jobs/${value}`}>
                  {jobLabel(value, key === 'jobId' ? metadata.jobNumber : undefined)}
                </Link>
              ) : typeof value === 'string' ? (
                value
              ) : (
                <code>{JSON.stringify(value)}</code>
              )}
            </dd>
          </div>
        );
      })}
    </dl>
  );
}

/** The filter form's fields, from the address's filters (empty: any). */
const auditFields = (filters: AuditFilters) => ({
  action: filters.action ?? '',
  actorType: filters.actorType ?? '',
  targetType: filters.targetType ?? '',
  targetId: filters.targetId ?? '',
  after: toLocalInput(filters.createdAfter),
  before: toLocalInput(filters.createdBefore),
});

function AuditFiltersForm(props: {
  address: string;
  filters: AuditFilters;
  onApply: (filters: AuditFilters) => string;
  /** The name of the one actor whose entries are shown (the address's `actorId`). */
  actorName: string | undefined;
}) {
  const { filters } = props;
  const { draft, set, apply, clear } = useFilterDraft(auditFields, filters, props.address, props.onApply);
  const { action, actorType, targetType, targetId, after, before } = draft;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    apply({
      action,
      actorType,
      actorId: filters.actorId,
      targetType,
      targetId: targetId.trim(),
      createdAfter: fromLocalInput(after),
      createdBefore: fromLocalInput(before),
    });
  };
  const actions = Object.keys(AUDIT_ACTIONS);
  if (filters.action && !actions.includes(filters.action)) actions.push(filters.action);
  return (
    <form onSubmit={submit} className="inline-form filters" aria-label="Filter the audit log">
      <label>
        Action
        <select value={action} onChange={set('action')}>
          <option value="">any</option>
          {actions.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
      </label>
      <label>
        Done by
        <select value={actorType} onChange={set('actorType')}>
          <option value="">anyone</option>
          {Object.entries(ACTOR_TYPES).map(([value, words]) => (
            <option key={value} value={value}>
              {words}
            </option>
          ))}
        </select>
      </label>
      {filters.actorId && (
        <span>
          Only by <strong>{props.actorName}</strong>{' '}
          <button type="button" onClick={() => apply({ ...filters, actorId: undefined })}>
            Anyone
          </button>
        </span>
      )}
      <label>
        Target type
        <select value={targetType} onChange={set('targetType')}>
          <option value="">any</option>
          {Object.entries(TARGET_TYPES).map(([value, words]) => (
            <option key={value} value={value}>
              {words}
            </option>
          ))}
        </select>
      </label>
      <label>
        Target id
        <input value={targetId} onChange={set('targetId')} size={20} />
      </label>
      <label>
        From
        <input type="datetime-local" value={after} onChange={set('after')} />
      </label>
      <label>
        Before
        <input type="datetime-local" value={before} onChange={set('before')} />
      </label>
      <FilterButtons onClear={clear} />
    </form>
  );
}
