import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { chatIntegrationsQuery } from '../api/chat';
import { Link } from 'react-router';
import { agentNamesQuery } from '../api/agent-pages';
import { TRIGGER_PAGE, triggerPagesQuery, type Trigger, type TriggerFilters } from '../api/triggers';
import { ShowOlder } from '../components/ShowOlder';
import { useSearchText } from './use-search-text';
import { counted } from '@drover/shared/counted';
import { ErrorMessage } from '../components/ErrorMessage';
import {
  answerWords,
  NextRun,
  OccurrenceOutcome,
  SelectorTarget,
  TRIGGER_TYPES,
  TYPE_WORDS,
  workflowWords,
} from '../components/trigger-words';
import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';
import { shortId } from '@drover/shared/short-id';

/**
 * The organization's triggers: what each runs, how it answers, and for cron its schedule; read by
 * the coordinator a page of 100 at a time, narrowed by type and a part of the name kept in the
 * address (`?type=`, `?q=`): an organization of thousands of triggers is neither sent nor drawn
 * whole every few seconds.
 */
export function TriggersPage() {
  const { orgId, org, loaded } = useOrg();
  const [typeText, setType] = useSearchText('type');
  const [name, setName] = useSearchText('q');
  // A type the page does not know (an old link, a typo) filters nothing, as its "any" says.
  const type = TRIGGER_TYPES.find((t) => t === typeText);
  const filters: TriggerFilters = {};
  if (type) filters.type = type;
  if (name.trim() !== '') filters.q = name.trim();
  const filtering = Object.keys(filters).length > 0;
  // The list as it was stays on screen while the next filter's first page is read (not another
  // organization's).
  const triggers = useInfiniteQuery({
    ...triggerPagesQuery(orgId, filters),
    placeholderData: (previous, query) => (query?.queryKey[1] === orgId ? previous : undefined),
  });
  const shown = triggers.data?.pages.flatMap((p) => p.items) ?? [];
  const matching = triggers.data?.pages[0]?.total ?? shown.length;
  const agentNames = useQuery(
    agentNamesQuery(
      orgId,
      shown.map((t) => t.agentId),
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
  // Not from the list kept on screen while another filter's is read (a filter that matched nothing,
  // cleared): the filters, and the field being typed in, stay.
  const none = triggers.data !== undefined && !triggers.isPlaceholderData && !filtering && matching === 0;
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
      {none && (
        <p>
          No trigger yet. A trigger names an agent (or the agents a label selector matches) and a workflow, and says how
          a run starts: a webhook called with an API token, a cron schedule, or a chat command.
        </p>
      )}
      {triggers.data && !none && (
        <div role="search" aria-label="Filter the triggers" className="selector-filter">
          <label className="status-filter">
            Type
            <select value={type ?? ''} onChange={(e) => setType(e.target.value)}>
              <option value="">any</option>
              {TRIGGER_TYPES.map((t) => (
                <option key={t} value={t}>
                  {TYPE_WORDS[t]}
                </option>
              ))}
            </select>
          </label>
          <label className="name-filter">
            Name
            <input type="search" value={name} maxLength={255} onChange={(e) => setName(e.target.value)} />
          </label>
          <p role="status" className="match-count">
            {triggers.isPlaceholderData
              ? 'Counting…'
              : filtering
                ? `${matching.toLocaleString('en-US')} ${matching === 1 ? 'trigger matches' : 'triggers match'}.`
                : `${counted(matching, 'trigger')}.`}
          </p>
        </div>
      )}
      {triggers.data && shown.length === 0 && filtering && <p>No trigger matches these filters.</p>}
      {shown.length > 0 && (
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
              {shown.map((trigger) => (
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
      <ShowOlder pages={triggers} what="triggers" label={`Show the next ${TRIGGER_PAGE} triggers`} />
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
