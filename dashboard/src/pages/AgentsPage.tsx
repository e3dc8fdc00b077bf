import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { api, apiPath } from '../api/client';
import { AGENT_PAGE, agentCountQuery, agentPagesQuery, type AgentFilters } from '../api/agent-pages';
import { agentsKey } from '../api/queries';
import type { Agent, Workflow } from '../api/types';
import { EnrollAgent } from '../components/EnrollAgent';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { LabelChips } from '../components/LabelChips';
import { parseSelectorText, SelectorInput } from '../components/SelectorInput';
import { AGENT_STATUSES, STATUS_WORDS } from '../components/agent-words';
import { describeParam, limited, workflowLimitWords } from '../components/workflow-words';

import { EnrollmentTokens } from './EnrollmentTokens';
import { RelabelAgentsForm } from './RelabelAgentsForm';
import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';
import { useSearchText } from './use-search-text';
import { counted } from '@drover/shared/counted';
import { Ago } from '../components/Ago';
import { ShowOlder } from '../components/ShowOlder';

/**
 * The organization's agents with their live status, labels and workflows, filtered by a label
 * selector, a status and a name kept in the address (`?selector=`, `?status=`, `?q=`), and read
 * by the coordinator a page of 100 at a time (a fleet of thousands is neither sent nor drawn whole
 * every few seconds); enroll, rename, revoke.
 */
export function AgentsPage() {
  const { orgId, org, loaded } = useOrg();
  const [selector, setSelector] = useSearchText('selector');
  const [statusText, setStatus] = useSearchText('status');
  const [name, setName] = useSearchText('q');
  // A status the page does not know (an old link, a typo) filters nothing, as its "any" says.
  const status = (AGENT_STATUSES as string[]).includes(statusText) ? statusText : '';
  const parsed = parseSelectorText(selector);
  // While what is typed does not parse, the list stays as the last selector that did filtered it.
  const [lastValid, setLastValid] = useState(parsed.requirements ? selector : '');
  if (parsed.requirements && lastValid !== selector) setLastValid(selector);
  const filters: AgentFilters = {};
  if (lastValid.trim() !== '') filters.selector = lastValid.trim();
  if (status !== '') filters.status = status;
  if (name.trim() !== '') filters.q = name.trim();
  // The list as it was stays on screen while the next filter's first page is read (not another
  // organization's: its agents' actions would go to this one).
  const agents = useInfiniteQuery({
    ...agentPagesQuery(orgId, filters),
    placeholderData: (previous, query) => (query?.queryKey[1] === orgId ? previous : undefined),
  });
  const filtering = Object.keys(filters).length > 0 || selector.trim() !== '';
  const everyAgent = useQuery({ ...agentCountQuery(orgId), enabled: filtering });
  if (loaded && !org) return <NotFoundPage />;
  const byAgent = new Map<string, Workflow[]>();
  for (const w of agents.data?.pages.flatMap((p) => p.workflows) ?? []) {
    byAgent.set(w.agentId, [...(byAgent.get(w.agentId) ?? []), w]);
  }
  const shown = agents.data?.pages.flatMap((p) => p.items) ?? [];
  const matching = agents.data?.pages[0]?.total ?? shown.length;
  const total = filtering ? everyAgent.data : matching;
  const none = agents.data !== undefined && !filtering && matching === 0;
  return (
    <section aria-labelledby="agents-heading">
      <h1 id="agents-heading">Agents</h1>
      <ErrorMessage error={agents.error} />
      {none && <p>No agent has enrolled in this organization yet.</p>}
      {agents.data && !none && (
        <>
          <div role="search" aria-label="Filter the agents" className="selector-filter">
            <label className="status-filter">
              Status
              <select value={status} onChange={(e) => setStatus(e.target.value)}>
                <option value="">any</option>
                {AGENT_STATUSES.map((s) => (
                  <option key={s} value={s}>
                    {STATUS_WORDS[s]}
                  </option>
                ))}
              </select>
            </label>
            <label className="name-filter">
              Name
              <input
                type="search"
                value={name}
                maxLength={255}
                onChange={(e) => setName(e.target.value)}
                placeholder="name or hostname"
              />
            </label>
            <SelectorInput
              id="agents-selector"
              label="Selector"
              value={selector}
              onChange={setSelector}
              parsed={parsed}
            />
            <p role="status" className="match-count">
              {agents.isPlaceholderData ? 'Counting…' : matchWords(filtering, matching, total, parsed.error !== null)}
            </p>
          </div>
          {filters.selector !== undefined && allows(org, 'agents.edit') && (
            <RelabelAgents key={filters.selector} orgId={orgId} selector={filters.selector} />
          )}
          {shown.length === 0 && filtering && (
            <p>
              {selector.trim() === '' && name.trim() === ''
                ? 'No agent has this status.'
                : 'No agent matches these filters.'}
            </p>
          )}
        </>
      )}
      {shown.length > 0 && (
        <div className="table-scroll">
          <table className="agents">
            <caption className="hint">
              Status and last seen refresh every few seconds. Labels:{' '}
              <span className="label label-reported">reported by the agent</span>{' '}
              <span className="label label-operator">set by an operator</span>
            </caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Machine</th>
                <th scope="col">Labels</th>
                <th scope="col">Workflows</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((agent) => (
                <AgentRow
                  key={agent.id}
                  orgId={orgId}
                  agent={agent}
                  workflows={byAgent.get(agent.id) ?? []}
                  can={{ edit: allows(org, 'agents.edit'), revoke: allows(org, 'agents.revoke') }}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!agents.data && !agents.error && <p className="loading">Loading…</p>}
      <ShowOlder pages={agents} what="agents" label={`Show the next ${AGENT_PAGE} agents`} />
      {allows(org, 'agents.enroll') && <EnrollAgent orgId={orgId} />}
      <EnrollmentTokens orgId={orgId} org={org} />
    </section>
  );
}

/**
 * The Agents page's way to label what its selector matches: a button that opens the form
 * (RelabelAgentsForm), and what the last change did, until the next.
 */
function RelabelAgents(props: { orgId: string; selector: string }) {
  const [open, setOpen] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  // Closed, the keyboard is back on the button that opened the form.
  const opener = useReturnFocus(open);
  if (open) {
    return (
      <RelabelAgentsForm
        orgId={props.orgId}
        selector={props.selector}
        onClose={(result) => {
          setOpen(false);
          setDone(result);
        }}
      />
    );
  }
  return (
    <div className="actions">
      <button
        type="button"
        ref={opener}
        onClick={() => {
          setDone(null);
          setOpen(true);
        }}
      >
        Label these agents
      </button>
      <p role="status" className="saved">
        {done ?? ''}
      </p>
    </div>
  );
}

/**
 * "240 agents.", "12 of 4,812 agents match.", and so on (the list shown is the filters' own: while
 * the previous filters' stays on screen, the count says it is counting).
 */
function matchWords(filtering: boolean, matching: number, total: number | undefined, halfTyped: boolean): string {
  if (!filtering) return `${counted(matching, 'agent')}.`;
  const of =
    total === undefined
      ? `${counted(matching, 'agent')} ${matching === 1 ? 'matches' : 'match'}`
      : `${matching.toLocaleString('en-US')} of ${counted(total, 'agent')} match`;
  return halfTyped ? `${of} the last selector that parsed.` : `${of}.`;
}

interface AgentRights {
  edit: boolean;
  revoke: boolean;
}

function AgentRow(props: { orgId: string; agent: Agent; workflows: Workflow[]; can: AgentRights }) {
  const { agent, workflows } = props;
  return (
    <tr aria-label={agent.name}>
      <th scope="row">
        <Link to={`/orgs/${props.orgId}/agents/${agent.id}`}>{agent.name}</Link>
      </th>
      <td>
        <span className={`status status-${agent.status}`}>{STATUS_WORDS[agent.status]}</span>
        <br />
        <span className="hint">
          {agent.lastSeenAt ? <Ago at={agent.lastSeenAt} prefix="last seen" /> : 'never seen'}
        </span>
      </td>
      <td>
        {agent.hostname}
        <br />
        <span className="hint">
          {agent.os} · agent {agent.agentVersion}
        </span>
      </td>
      <td>
        <LabelChips labels={agent.labels} operatorLabels={agent.operatorLabels} />
      </td>
      <td>
        {workflows.length === 0 ? (
          <span className="hint">none reported</span>
        ) : (
          <ul className="workflows">
            {workflows.map((w) => (
              <li key={w.id}>
                <strong>{w.name}</strong>
                {w.description && <span className="hint"> {w.description}</span>}
                {limited(w) && <span className="hint"> (limited: {workflowLimitWords(w)})</span>}
                {w.paramsSchema && w.paramsSchema.length > 0 && (
                  <ul className="params">
                    {w.paramsSchema.map((p) => (
                      <li key={p.name}>{describeParam(p)}</li>
                    ))}
                  </ul>
                )}
              </li>
            ))}
          </ul>
        )}
      </td>
      <td>{agent.status !== 'revoked' && <AgentActions {...props} />}</td>
    </tr>
  );
}

function AgentActions({ orgId, agent, can }: { orgId: string; agent: Agent; can: AgentRights }) {
  const [mode, setMode] = useState<'idle' | 'rename' | 'revoke'>('idle');
  const [name, setName] = useState(agent.name);
  const renameButton = useReturnFocus(mode === 'rename');
  const revokeButton = useReturnFocus(mode === 'revoke');
  const queryClient = useQueryClient();
  const done = () => {
    setMode('idle');
    void queryClient.invalidateQueries({ queryKey: agentsKey(orgId) });
  };
  const rename = useMutation({
    mutationFn: () => api<Agent>('PATCH', apiPath`/orgs/${orgId}/agents/${agent.id}`, { body: { name } }),
    onSuccess: done,
  });
  const revoke = useMutation({
    mutationFn: () => api<Agent>('DELETE', apiPath`/orgs/${orgId}/agents/${agent.id}`),
    onSuccess: done,
  });
  const submitRename = (event: FormEvent) => {
    event.preventDefault();
    rename.mutate();
  };
  if (mode === 'rename') {
    return (
      <Confirm onSubmit={submitRename} onCancel={() => setMode('idle')} className="inline-form">
        <label>
          New name for {agent.name}
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <button type="submit" disabled={rename.isPending}>
          Save
        </button>
        <button type="button" onClick={() => setMode('idle')}>
          Cancel
        </button>
        <ErrorMessage error={rename.error} />
      </Confirm>
    );
  }
  if (mode === 'revoke') {
    return (
      <Confirm label={`Revoke ${agent.name}`} onCancel={() => setMode('idle')}>
        <p>
          Revoke {agent.name}? Its stream is closed, its unfinished jobs fail, and it can only come back by enrolling
          again as a new agent.
        </p>
        <button type="button" className="danger" onClick={() => revoke.mutate()} disabled={revoke.isPending}>
          Revoke agent
        </button>
        <button type="button" onClick={() => setMode('idle')}>
          Keep it
        </button>
        <ErrorMessage error={revoke.error} />
      </Confirm>
    );
  }
  return (
    <div className="actions">
      {can.edit && (
        <button type="button" ref={renameButton} onClick={() => setMode('rename')} aria-label={`Rename ${agent.name}`}>
          Rename
        </button>
      )}
      {can.revoke && (
        <button type="button" ref={revokeButton} onClick={() => setMode('revoke')} aria-label={`Revoke ${agent.name}`}>
          Revoke
        </button>
      )}
    </div>
  );
}
