import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { Link, useParams } from 'react-router';
import { ApiError } from '../api/client';
import { agentQuery } from '../api/queries';
import type { Agent } from '../api/types';
import { STATUS_WORDS } from '../components/agent-words';
import { ErrorMessage } from '../components/ErrorMessage';
import { LabelChips } from '../components/LabelChips';
import { dateTime } from '../components/time';
import { AgentLabelsForm } from './AgentLabelsForm';
import { AgentWorkflows } from './AgentWorkflows';
import { RecentJobs } from '../components/RecentJobs';
import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';
import { Ago } from '../components/Ago';

/**
 * An agent: its status and machine, its labels (those it reports, the operators', the result; edit
 * the operators'), its workflows with their rate limits (owners change them), and its last jobs.
 */
export function AgentPage() {
  const { orgId, org, loaded } = useOrg();
  const { agentId = '' } = useParams();
  const agent = useQuery(agentQuery(orgId, agentId));
  if ((loaded && !org) || (agent.error instanceof ApiError && agent.error.statusCode === 404)) return <NotFoundPage />;
  if (agent.error) return <ErrorMessage error={agent.error} />;
  if (!agent.data) return <p className="loading">Loading…</p>;
  const a = agent.data;
  return (
    <section aria-labelledby="agent-heading">
      <h1 id="agent-heading">{a.name}</h1>
      <p>
        <Link to={`/orgs/${orgId}/agents`}>All agents</Link>
      </p>
      <dl className="facts">
        <dt>Status</dt>
        <dd>
          <span className={`status status-${a.status}`}>{STATUS_WORDS[a.status]}</span>
          {', '}
          {a.lastSeenAt ? <Ago at={a.lastSeenAt} prefix="last seen" /> : 'never seen'}
        </dd>
        <dt>Machine</dt>
        <dd>
          {a.hostname} · {a.os} · agent {a.agentVersion}
        </dd>
        <dt>Enrolled</dt>
        <dd>{dateTime(a.enrolledAt)}</dd>
      </dl>
      <AgentLabels orgId={orgId} agent={a} canEdit={allows(org, 'agents.edit')} />
      <AgentWorkflows orgId={orgId} agent={a} canLimit={allows(org, 'workflows.limits')} />
      <RecentJobs orgId={orgId} of={{ agentId: a.id }} allWords="All jobs on this agent" />
    </section>
  );
}

/** Keys both the agent and an operator set, with the values each gave. */
function replaced(agent: Agent): { key: string; reported: string; operator: string }[] {
  return Object.keys(agent.operatorLabels)
    .filter((key) => Object.hasOwn(agent.reportedLabels, key))
    .sort()
    .map((key) => ({ key, reported: agent.reportedLabels[key]!, operator: agent.operatorLabels[key]! }));
}

function AgentLabels({ orgId, agent, canEdit }: { orgId: string; agent: Agent; canEdit: boolean }) {
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState(false);
  const editButton = useRef<HTMLButtonElement>(null);
  const closed = useRef(false);
  useEffect(() => {
    // Back from the form (saved or cancelled): the keyboard returns to the button that opened it.
    if (!editing && closed.current) editButton.current?.focus();
    closed.current = false;
  }, [editing]);
  const close = (didSave: boolean) => {
    closed.current = true;
    setSaved(didSave);
    setEditing(false);
  };
  const clashes = replaced(agent);
  return (
    <section aria-labelledby="labels-heading">
      <h2 id="labels-heading">Labels</h2>
      <p className="hint">
        Selectors match an agent by its labels: those it reports of itself (<code>os</code> and <code>arch</code> among
        them) and those operators set, an operator&apos;s winning over the agent&apos;s of the same key.
      </p>
      <div className="label-sources">
        <section aria-labelledby="labels-merged-heading">
          <h3 id="labels-merged-heading">Its labels</h3>
          <LabelChips labels={agent.labels} operatorLabels={agent.operatorLabels} />
        </section>
        <section aria-labelledby="labels-reported-heading">
          <h3 id="labels-reported-heading">Reported by the agent</h3>
          <LabelChips
            labels={agent.reportedLabels}
            source="reported"
            replacedBy={agent.operatorLabels}
            empty="none reported (an agent reports them when it connects)"
          />
        </section>
        <section aria-labelledby="labels-operator-heading">
          <h3 id="labels-operator-heading">Set by operators</h3>
          <LabelChips labels={agent.operatorLabels} source="operator" empty="none set" />
        </section>
      </div>
      {clashes.length > 0 && (
        <ul className="hint label-clashes">
          {clashes.map((c) => (
            <li key={c.key}>
              An operator&apos;s <code>{`${c.key}=${c.operator}`}</code> replaces the agent&apos;s{' '}
              <code>{`${c.key}=${c.reported}`}</code>.
            </li>
          ))}
        </ul>
      )}
      {editing ? (
        <AgentLabelsForm orgId={orgId} agent={agent} onClose={close} />
      ) : (
        agent.status !== 'revoked' &&
        canEdit && (
          <div className="actions">
            <button type="button" ref={editButton} onClick={() => setEditing(true)}>
              Edit labels
            </button>
            <p role="status" className="saved">
              {saved ? 'Labels saved.' : ''}
            </p>
          </div>
        )
      )}
    </section>
  );
}
