import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState } from 'react';
import { api, apiPath } from '../api/client';
import { apiTokensQuery, type ApiToken, type IssuedApiToken } from '../api/access';
import { agentNamesQuery } from '../api/agent-pages';
import { sessionQuery } from '../api/queries';
import { bindingsQuery } from '../api/storage-bindings';
import { triggerNamesQuery } from '../api/triggers';
import { CopyBlock } from '../components/CopyBlock';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { grantWords, limitWords, tokenState, type Names } from '../components/grant-words';
import { dateTime } from '../components/time';
import { IssueTokenForm } from './IssueTokenForm';
import { NotFoundPage } from './NotFoundPage';
import { allows, useOrg } from './use-org';

/** The organization's API tokens: their grants, limits and state; issue one, revoke one. */
export function ApiTokensPage() {
  const { orgId, org, loaded } = useOrg();
  const tokens = useQuery(apiTokensQuery(orgId));
  // The names of the agents and triggers the tokens are granted, by id: never every one of the organization.
  const scopes = (tokens.data ?? []).flatMap((token) => token.scopes);
  const agents = useQuery(
    agentNamesQuery(
      orgId,
      scopes.flatMap((g) => (g.type === 'agent' ? g.agentIds : [])),
    ),
  );
  const triggers = useQuery(
    triggerNamesQuery(
      orgId,
      scopes.flatMap((g) => (g.type === 'trigger' ? g.triggerIds : [])),
    ),
  );
  const bindings = useQuery(bindingsQuery(orgId));
  const session = useQuery(sessionQuery);
  const [issued, setIssued] = useState<IssuedApiToken | null>(null);
  if (loaded && !org) return <NotFoundPage />;
  const mayIssue = allows(org, 'api_tokens.issue');
  // A member revokes their own tokens; another's, only an owner (the API answers 403 otherwise).
  const mayRevokeAny = allows(org, 'api_tokens.revoke_any');
  const mayRevoke = (token: ApiToken) => mayRevokeAny || (mayIssue && token.userId === session.data?.user.id);
  const names: Names = new Map([
    ...(agents.data ?? []),
    ...(triggers.data ?? []),
    ...(bindings.data ?? []).map((b) => [b.id, b.name] as const),
  ]);
  return (
    <section aria-labelledby="api-tokens-heading">
      <h1 id="api-tokens-heading">API tokens</h1>
      <p>
        External systems (CI, scripts) call the public API with an API token: <code>Authorization: Bearer drv_…</code>.
        A token may do only what its grants say, within this organization. Any member may issue tokens and revoke their
        own; an owner may revoke any. A token stops working while the member who issued it is not in the organization.
      </p>
      {issued && <IssuedToken token={issued} onDone={() => setIssued(null)} />}
      <ErrorMessage error={tokens.error} />
      {tokens.data && tokens.data.length === 0 && <p>No API token yet.</p>}
      {tokens.data && tokens.data.length > 0 && (
        <div className="table-scroll">
          <table className="tokens">
            <caption className="hint">Newest first; revoked tokens stay listed.</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Grants</th>
                <th scope="col">Job limits</th>
                <th scope="col">Expires</th>
                <th scope="col">State</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {tokens.data.map((token) => (
                <TokenRow key={token.id} orgId={orgId} token={token} names={names} mayRevoke={mayRevoke(token)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {!tokens.data && !tokens.error && <p className="loading">Loading…</p>}
      {mayIssue && (
        <IssueTokenForm
          orgId={orgId}
          bindings={bindings.data ?? []}
          names={names}
          loadError={bindings.error}
          onIssued={setIssued}
        />
      )}
    </section>
  );
}

/** The plaintext of a token just issued: shown this once, with a copy button. */
function IssuedToken({ token, onDone }: { token: IssuedApiToken; onDone: () => void }) {
  return (
    <div className="panel issued" role="region" aria-label="New API token">
      <h2>Token {token.name} issued</h2>
      <p className="warning">
        Copy it now: this is the only time it is shown. The coordinator keeps only a hash of it, so it cannot show it
        again; a lost token is revoked and replaced by a new one.
      </p>
      <CopyBlock label="API token" text={token.token} />
      <button type="button" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}

const STATE_CLASS = { active: 'status-connected', expired: 'status-cancelled', revoked: 'status-revoked' } as const;

function TokenRow(props: { orgId: string; token: ApiToken; names: Names; mayRevoke: boolean }) {
  const { orgId, token, names, mayRevoke } = props;
  const state = tokenState(token);
  return (
    <tr aria-label={token.name}>
      <th scope="row">
        {token.name}
        <br />
        <code className="hint">{token.hint}</code>
      </th>
      <td>
        {token.scopes.length === 0 ? (
          <span className="hint">none (reads only its own metadata)</span>
        ) : (
          <ul className="grants">
            {token.scopes.map((g) => (
              <li key={g.type}>{grantWords(g, names)}</li>
            ))}
          </ul>
        )}
      </td>
      <td>{limitWords(token.rateLimit)}</td>
      <td>{token.expiresAt ? dateTime(token.expiresAt) : 'never'}</td>
      <td>
        <span className={`status ${STATE_CLASS[state]}`}>{state}</span>
        <br />
        <span className="hint">
          {token.revokedAt ? `revoked ${dateTime(token.revokedAt)}` : `issued ${dateTime(token.createdAt)}`}
        </span>
      </td>
      <td>{state !== 'revoked' && mayRevoke && <RevokeToken orgId={orgId} token={token} />}</td>
    </tr>
  );
}

function RevokeToken({ orgId, token }: { orgId: string; token: ApiToken }) {
  const [confirming, setConfirming] = useState(false);
  const opener = useReturnFocus(confirming);
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => api<ApiToken>('DELETE', apiPath`/orgs/${orgId}/api-tokens/${token.id}`),
    onSuccess: () => {
      setConfirming(false);
      void queryClient.invalidateQueries({ queryKey: apiTokensQuery(orgId).queryKey });
    },
  });
  if (!confirming) {
    return (
      <button type="button" ref={opener} onClick={() => setConfirming(true)} aria-label={`Revoke ${token.name}`}>
        Revoke
      </button>
    );
  }
  return (
    <Confirm label={`Revoke ${token.name}`} onCancel={() => setConfirming(false)}>
      <p>Revoke {token.name}? Every call made with it is refused from now on (401). This cannot be undone.</p>
      <button type="button" className="danger" onClick={() => revoke.mutate()} disabled={revoke.isPending}>
        Revoke token
      </button>
      <button type="button" onClick={() => setConfirming(false)}>
        Keep it
      </button>
      <ErrorMessage error={revoke.error} />
    </Confirm>
  );
}
