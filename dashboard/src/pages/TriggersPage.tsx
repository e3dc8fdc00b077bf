import { useQuery } from '@tanstack/react-query';
import { chatIntegrationsQuery } from '../api/chat';
import { Link } from 'react-router';
import { agentNamesQuery } from '../api/agent-pages';
import { TRIGGERS_REFRESH_MS, triggersQuery, type Trigger } from '../api/triggers';
import { ErrorMessage } from '../components/ErrorMessage';
import {
  answerWords,
  NextRun,
  OccurrenceOutcome,
  SelectorTarget,
  TYPE_WORDS,
  workflowWords,
} from '../components/trigger-words';
import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';
import { shortId } from '@drover/shared/short-id';

/** The organization's triggers: what each runs, how it answers, and for cron its schedule. */
export function TriggersPage() {
  const { orgId, org, loaded } = useOrg();
  const triggers = useQuery({ ...triggersQuery(orgId), refetchInterval: TRIGGERS_REFRESH_MS });
  const agentNames = useQuery(
    agentNamesQuery(
      orgId,
      (triggers.data ?? []).map((t) => t.agentId),
    ),
  );
  const integrations = useQuery(chatIntegrationsQuery(orgId));
  if (loaded && !org) return <NotFoundPage />;
  const agentName = agentNames.data ?? new Map<string, string>();
  // Chat triggers whose workspace is not connected do not fire (known once the list has loaded).
  const connected = integrations.data && new Set(integrations.data.map((i) => `${i.provider}:${i.teamId}`));
  const idle = (t: Trigger) =>
    connected !== undefined &&
    (t.type === 'slack' || t.type === 'discord') &&
    !connected.has(`${t.type}:${t.chatTeamId}`);
  return (
    <section aria-labelledby="triggers-heading">
      <div className="page-head">
        <h1 id="triggers-heading">Triggers</h1>
        {allows(org, 'triggers.edit') && (
          <Link className="button-link" to={`/orgs/${orgId}/triggers/new`}>
            New trigger
          </Link>
        )}
      </div>
      <ErrorMessage error={triggers.error} />
      {triggers.data && triggers.data.length === 0 && (
        <p>
          No trigger yet. A trigger names an agent (or the agents a label selector matches) and a workflow, and says how
          a run starts: a webhook called with an API token, a cron schedule, or a chat command.
        </p>
      )}
      {triggers.data && triggers.data.length > 0 && (
        <div className="table-scroll">
          <table className="triggers">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Runs on</th>
                <th scope="col">Workflow</th>
                <th scope="col">Runs</th>
                <th scope="col">Next run</th>
                <th scope="col">Last occurrence</th>
              </tr>
            </thead>
            <tbody>
              {triggers.data.map((trigger) => (
                <TriggerRow
                  key={trigger.id}
                  orgId={orgId}
                  trigger={trigger}
                  agentName={trigger.agentId === null ? undefined : agentName.get(trigger.agentId)}
                  notConnected={idle(trigger)}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!triggers.data && !triggers.error && <p className="loading">Loading…</p>}
    </section>
  );
}

function TriggerRow(props: { orgId: string; trigger: Trigger; agentName?: string; notConnected: boolean }) {
  const { orgId, trigger, agentName, notConnected } = props;
  const cron = trigger.type === 'cron';
  const last = trigger.lastOccurrences[0];
  return (
    <tr aria-label={trigger.name}>
      <th scope="row">
        <Link to={`/orgs/${orgId}/triggers/${trigger.id}`}>{trigger.name}</Link>
      </th>
      <td>
        {TYPE_WORDS[trigger.type]}
        {notConnected && <span className="warning"> (workspace not connected)</span>}
      </td>
      <td className="name">
        {trigger.agentSelector !== null && <SelectorTarget orgId={orgId} trigger={trigger} />}
        {trigger.agentSelector === null &&
          trigger.agentId !== null &&
          (agentName ?? <code>{shortId(trigger.agentId)}</code>)}
      </td>
      <td>{workflowWords(trigger)}</td>
      <td>{answerWords(trigger)}</td>
      <td>{cron ? <NextRun trigger={trigger} /> : <span className="hint">not scheduled</span>}</td>
      <td>
        {!cron && <span className="hint">not scheduled</span>}
        {cron && !last && <span className="hint">none yet</span>}
        {cron && last && <OccurrenceOutcome occurrence={last} />}
      </td>
    </tr>
  );
}
