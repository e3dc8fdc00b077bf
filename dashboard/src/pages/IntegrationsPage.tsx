import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState } from 'react';
import { useLocation, useNavigate } from 'react-router';
import {
  chatIntegrationsQuery,
  chatProvidersQuery,
  disconnect,
  PROVIDER_NAMES,
  PROVIDER_SETTINGS,
  startConnect,
  TEAM_WORDS,
  type ChatIntegration,
  type ChatOutcome,
  type ChatProviderState,
} from '../api/chat';
import { emailsOf, membersQuery } from '../api/jobs';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';

import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';
import { Ago } from '../components/Ago';

/**
 * The organization's chat integrations (`/orgs/:orgId/integrations`): the Slack workspaces and
 * Discord servers it connected, which providers this coordinator is set up for, Connect (the
 * provider's OAuth consent page, which sends the browser back here) and Disconnect for owners,
 * and the outcome of a connection the provider sent the browser back with.
 */
export function IntegrationsPage() {
  const { orgId, org, loaded } = useOrg();
  const providers = useQuery(chatProvidersQuery(orgId));
  const integrations = useQuery(chatIntegrationsQuery(orgId));
  const members = useQuery(membersQuery(orgId));
  if (loaded && !org) return <NotFoundPage />;
  const mayManage = allows(org, 'chat.integrations');
  const emails = emailsOf(members.data);
  return (
    <section aria-labelledby="integrations-heading">
      <h1 id="integrations-heading">Integrations</h1>
      <p className="hint">
        Slack and Discord triggers, and the notifications of any trigger, name a channel of a workspace or server
        connected here.
      </p>
      <ConnectOutcome />
      <h2 id="connected-heading">Connected workspaces</h2>
      <ErrorMessage error={integrations.error} />
      {!integrations.data && !integrations.error && <p className="loading">Loading…</p>}
      {integrations.data && integrations.data.length === 0 && <p>No workspace or server connected yet.</p>}
      {integrations.data && integrations.data.length > 0 && (
        <table className="jobs" aria-labelledby="connected-heading">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Provider</th>
              <th scope="col">Team id</th>
              <th scope="col">Connected by</th>
              <th scope="col">Connected</th>
              {mayManage && (
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {integrations.data.map((i) => (
              <IntegrationRow key={i.id} orgId={orgId} integration={i} emails={emails} mayManage={mayManage} />
            ))}
          </tbody>
        </table>
      )}
      <h2>Providers</h2>
      <ErrorMessage error={providers.error} />
      {(providers.data ?? []).map((p) => (
        <ProviderPanel key={p.provider} orgId={orgId} state={p} mayManage={mayManage} />
      ))}
    </section>
  );
}

/**
 * The outcome of a connection the finishing page came back with: in the history entry's state
 * (`chatOutcome`), which only this dashboard's own navigation sets; never text from the address.
 */
function ConnectOutcome() {
  const location = useLocation();
  const navigate = useNavigate();
  const outcome = (location.state as { chatOutcome?: ChatOutcome } | null)?.chatOutcome;
  if (!outcome) return null;
  const dismiss = (
    <button type="button" onClick={() => void navigate(location.pathname, { replace: true, state: null })}>
      Dismiss
    </button>
  );
  if ('error' in outcome) {
    return (
      <div role="alert" className="error">
        <p>Connecting failed: {outcome.error}</p>
        {dismiss}
      </div>
    );
  }
  const provider = outcome.connected;
  return (
    <div role="status" className="success">
      <p>
        Connected the {PROVIDER_NAMES[provider]} {TEAM_WORDS[provider]} {outcome.team}.
      </p>
      {dismiss}
    </div>
  );
}

function IntegrationRow(props: {
  orgId: string;
  integration: ChatIntegration;
  /** Undefined while the members load. */
  emails: Map<string, string> | undefined;
  mayManage: boolean;
}) {
  const { orgId, integration: i, emails, mayManage } = props;
  const [confirming, setConfirming] = useState(false);
  const opener = useReturnFocus(confirming);
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () => disconnect(orgId, i.id),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: chatIntegrationsQuery(orgId).queryKey }),
  });
  const label = `${PROVIDER_NAMES[i.provider]} ${TEAM_WORDS[i.provider]} ${i.teamName}`;
  return (
    <tr>
      <th scope="row">{i.teamName}</th>
      <td>{PROVIDER_NAMES[i.provider]}</td>
      <td>
        <code>{i.teamId}</code>
      </td>
      <td>
        {!i.connectedByUserId
          ? '—'
          : emails && (emails.get(i.connectedByUserId) ?? <span className="hint">a former member</span>)}
      </td>
      <td>
        <Ago at={i.createdAt} />
      </td>
      {mayManage && (
        <td>
          {!confirming ? (
            <button type="button" ref={opener} onClick={() => setConfirming(true)} aria-label={`Disconnect ${label}`}>
              Disconnect
            </button>
          ) : (
            <Confirm label={`Disconnect ${label}`} onCancel={() => setConfirming(false)}>
              <p>
                Disconnect the {label}? The coordinator forgets it and its token: its chat triggers no longer start runs
                until an owner connects it again.
              </p>
              <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending}>
                Disconnect for good
              </button>
              <button type="button" onClick={() => setConfirming(false)}>
                Keep it
              </button>
              <ErrorMessage error={remove.error} />
            </Confirm>
          )}
        </td>
      )}
    </tr>
  );
}

/** A provider: set up or not on this coordinator (and what its operator must set), and Connect. */
function ProviderPanel({ orgId, state, mayManage }: { orgId: string; state: ChatProviderState; mayManage: boolean }) {
  const name = PROVIDER_NAMES[state.provider];
  const connect = useMutation({
    mutationFn: () => startConnect(orgId, state.provider),
    // The provider's consent page; it sends the browser back to this page with the outcome.
    onSuccess: ({ authorizeUrl }) => window.location.assign(authorizeUrl),
  });
  return (
    <div className="panel" role="region" aria-label={name}>
      <h3>{name}</h3>
      {state.configured ? (
        <>
          <p>{name} is set up on this coordinator.</p>
          {mayManage ? (
            <>
              <button type="button" onClick={() => connect.mutate()} disabled={connect.isPending || connect.isSuccess}>
                Connect {name}
              </button>
              <p className="hint">
                {state.provider === 'slack'
                  ? 'Opens Slack, where you allow the Drover app in your workspace; Slack then sends you back here.'
                  : 'Opens Discord, where you add the Drover bot to your server; Discord then sends you back here.'}
              </p>
              {connect.isSuccess && <p role="status">Opening {name}…</p>}
              <ErrorMessage error={connect.error} />
            </>
          ) : (
            <p className="hint">An owner of the organization connects a {TEAM_WORDS[state.provider]}.</p>
          )}
        </>
      ) : (
        <>
          <p>
            {name} is not set up on this coordinator. Its operator sets{' '}
            {PROVIDER_SETTINGS[state.provider].map((s, i, all) => (
              <span key={s}>
                <code>{s}</code>
                {i < all.length - 2 ? ', ' : i === all.length - 2 ? ' and ' : ''}
              </span>
            ))}{' '}
            (the {name} app&apos;s credentials) and restarts it; then owners can connect a {TEAM_WORDS[state.provider]}{' '}
            here.
          </p>
        </>
      )}
    </div>
  );
}
