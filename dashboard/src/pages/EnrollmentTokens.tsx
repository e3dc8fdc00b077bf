import { shortId } from '@drover/shared/short-id';
import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { Link } from 'react-router';
import { agentNamesQuery } from '../api/agent-pages';
import { api, ApiError, apiPath } from '../api/client';
import {
  enrollmentTokenPagesQuery,
  enrollmentTokensKey,
  type EnrollmentToken,
  type EnrollmentTokenFilter,
} from '../api/enrollment-tokens';
import { sessionQuery } from '../api/queries';
import type { Org } from '../api/types';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { ShowOlder } from '../components/ShowOlder';
import { dateTime } from '../components/time';
import { useMutation } from '../lib/mutation';
import { allows } from './use-org';

const FILTERS: { value: EnrollmentTokenFilter; label: string }[] = [
  { value: 'open', label: 'open (may still enroll a machine)' },
  { value: 'used', label: 'used' },
  { value: 'revoked', label: 'revoked' },
  { value: 'expired', label: 'expired' },
  { value: 'all', label: 'any' },
];

const STATE_CLASS = {
  open: 'status-connected',
  used: 'status-cancelled',
  revoked: 'status-revoked',
  expired: 'status-cancelled',
} as const;

const NONE_WORDS: Record<EnrollmentTokenFilter, string> = {
  open: 'No open enrollment token: none can enroll a machine now.',
  used: 'No enrollment token was used yet.',
  revoked: 'No enrollment token was revoked.',
  expired: 'No enrollment token expired unused.',
  all: 'No enrollment token was made yet.',
};

/** A token's label as the list says it: its name, or its short id. */
const labelOf = (t: EnrollmentToken) => t.name ?? `unlabelled ${shortId(t.id)}`;

/**
 * The organization's enrollment tokens, the open ones first shown: who made each and when it
 * expires, the agent a used one enrolled; its maker (and owners and operators, anyone's) revokes an
 * open one, which then enrolls nothing.
 */
export function EnrollmentTokens({ orgId, org }: { orgId: string; org: Org | undefined }) {
  const [filter, setFilter] = useState<EnrollmentTokenFilter>('open');
  const [said, setSaid] = useState<string | null>(null);
  const show = useRef<HTMLSelectElement>(null);
  const tokens = useInfiniteQuery(enrollmentTokenPagesQuery(orgId, filter));
  const session = useQuery(sessionQuery);
  const list = tokens.data?.pages.flatMap((p) => p.items) ?? [];
  const agentNames = useQuery(
    agentNamesQuery(
      orgId,
      list.map((t) => t.usedByAgentId),
    ),
  );
  const mayRevokeAny = allows(org, 'agents.revoke');
  const mayRevoke = (t: EnrollmentToken) =>
    t.state === 'open' && (mayRevokeAny || (allows(org, 'agents.enroll') && t.createdBy === session.data?.user.id));
  return (
    <section aria-labelledby="enrollment-tokens-heading" className="panel">
      <h2 id="enrollment-tokens-heading">Enrollment tokens</h2>
      <p className="hint">
        Each token enrolls one machine until it expires. Revoke one that leaked, or that is no longer needed: it enrolls
        nothing from then on. Its maker may revoke it; owners and operators, anyone&apos;s.
      </p>
      <div className="inline-form">
        <label>
          Show
          <select
            ref={show}
            value={filter}
            onChange={(e) => {
              setFilter(e.target.value as EnrollmentTokenFilter);
              setSaid(null);
            }}
          >
            {FILTERS.map((f) => (
              <option key={f.value} value={f.value}>
                {f.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <p role="status" className="saved">
        {said ?? ''}
      </p>
      <ErrorMessage error={tokens.error} />
      {tokens.data && list.length === 0 && <p>{NONE_WORDS[filter]}</p>}
      {list.length > 0 && (
        <table className="tokens">
          <caption className="hint">Newest first.</caption>
          <thead>
            <tr>
              <th scope="col">Label</th>
              <th scope="col">Made by</th>
              <th scope="col">State</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((t) => (
              <tr key={t.id} aria-label={labelOf(t)}>
                <th scope="row">{labelOf(t)}</th>
                <td>
                  {t.createdByEmail ?? <span className="hint">a former member</span>}
                  <br />
                  <span className="hint">{dateTime(t.createdAt)}</span>
                </td>
                <td>
                  <span className={`status ${STATE_CLASS[t.state]}`}>{t.state}</span>
                  <br />
                  <span className="hint">
                    <StateWords token={t} orgId={orgId} agentName={agentNames.data?.get(t.usedByAgentId ?? '')} />
                  </span>
                </td>
                <td>
                  {mayRevoke(t) && (
                    <RevokeEnrollmentToken
                      orgId={orgId}
                      token={t}
                      onDone={(words) => {
                        // Its row (open ones shown) or its button goes: the keyboard stays in the panel.
                        show.current?.focus();
                        setSaid(words);
                      }}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ShowOlder pages={tokens} what="tokens" label="Show older tokens" />
    </section>
  );
}

/** When the token ends or ended, and how: `until 12/2/2026, 3:00 PM`, `enrolled edge-7 …`. */
function StateWords({ token: t, orgId, agentName }: { token: EnrollmentToken; orgId: string; agentName?: string }) {
  switch (t.state) {
    case 'open':
      return <>until {dateTime(t.expiresAt)}</>;
    case 'expired':
      return <>expired {dateTime(t.expiresAt)}</>;
    case 'revoked':
      return <>revoked {dateTime(t.revokedAt ?? t.createdAt)}</>;
    case 'used':
      return (
        <>
          enrolled{' '}
          {t.usedByAgentId ? (
            <Link to={`/orgs/${orgId}/agents/${t.usedByAgentId}`}>{agentName ?? shortId(t.usedByAgentId)}</Link>
          ) : (
            'an agent'
          )}{' '}
          {dateTime(t.usedAt ?? t.createdAt)}
        </>
      );
  }
}

/**
 * Revoke, after asking; `onDone` says how it ended: revoked, or (409) spent since the list was
 * read, which is then read anew (the token is no longer open, and its button goes).
 */
function RevokeEnrollmentToken(props: { orgId: string; token: EnrollmentToken; onDone: (words: string) => void }) {
  const { orgId, token } = props;
  const [confirming, setConfirming] = useState(false);
  const opener = useReturnFocus(confirming);
  const queryClient = useQueryClient();
  const label = labelOf(token);
  const revoke = useMutation({
    mutationFn: () => api<EnrollmentToken>('DELETE', apiPath`/orgs/${orgId}/enrollment-tokens/${token.id}`),
    onSuccess: () => {
      props.onDone(`Revoked ${label}: it enrolls nothing from now on.`);
      setConfirming(false);
      void queryClient.invalidateQueries({ queryKey: enrollmentTokensKey(orgId) });
    },
    onError: (error) => {
      if (!(error instanceof ApiError && error.statusCode === 409)) return;
      props.onDone(`Not revoked: ${label} was already used to enroll an agent: revoke that agent instead.`);
      setConfirming(false);
      void queryClient.invalidateQueries({ queryKey: enrollmentTokensKey(orgId) });
    },
  });
  if (!confirming) {
    return (
      <button type="button" ref={opener} onClick={() => setConfirming(true)} aria-label={`Revoke ${label}`}>
        Revoke
      </button>
    );
  }
  return (
    <Confirm label={`Revoke ${label}`} onCancel={() => setConfirming(false)}>
      <p>Revoke {label}? A machine enrolling with it is refused from now on. This cannot be undone.</p>
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
