import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useRef, type MouseEvent } from 'react';
import { Link, Navigate, NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { api, ApiError, apiPath } from '../api/client';
import { myInvitationsQuery } from '../api/access';
import { orgsQuery, sessionQuery } from '../api/queries';
import type { Org } from '../api/types';
import { ErrorMessage } from '../components/ErrorMessage';
import { useFocusOnNewPage } from '../lib/page-focus';
import { useSessionEnded } from '../lib/session';
import { allows, useFrameOrgId, type FrameOrgState } from './use-org';

/**
 * The frame of every signed-in page: one line of header (the brand, which leads home, the
 * organization switcher, the navigation, the user and sign-out) down to 1,280 px wide, and a
 * footer with the API reference. Before the header, the first stop of the Tab key: a link that
 * skips the header's dozen and more stops to the page's content (drawn when it has the keyboard).
 * Going to another page moves the keyboard to its heading (lib/page-focus.ts).
 */
export function Shell() {
  const session = useQuery(sessionQuery);
  const location = useLocation();
  if (session.error instanceof ApiError && session.error.statusCode === 401) {
    const next = location.pathname + location.search;
    return <Navigate to={next === '/' ? '/login' : `/login?next=${encodeURIComponent(next)}`} replace />;
  }
  if (session.error) return <ErrorMessage error={session.error} />;
  if (!session.data) return <p className="loading">Loading…</p>;
  return <SignedIn email={session.data.user.email} />;
}

function SignedIn({ email }: { email: string }) {
  const orgs = useQuery(orgsQuery);
  const orgId = useFrameOrgId();
  const current = orgs.data?.find((o) => o.id === orgId);
  const main = useRef<HTMLElement>(null);
  useFocusOnNewPage(main);
  const skipToContent = (event: MouseEvent) => {
    // The keyboard moves into the content (the next Tab is its first link or field), and the
    // address keeps no `#content`: the router's history is left alone.
    event.preventDefault();
    main.current?.focus();
  };
  return (
    <div className="shell">
      <a className="skip-link" href="#content" onClick={skipToContent}>
        Skip to content
      </a>
      <header className="topbar">
        <Link className="brand" to={current ? `/orgs/${current.id}` : '/'} aria-label="Drover home">
          Drover
        </Link>
        {orgs.data && orgs.data.length > 0 && <OrgSwitcher orgs={orgs.data} current={current} />}
        {current && (
          <nav aria-label="Main">
            <NavLink to={`/orgs/${current.id}/agents`}>Agents</NavLink>
            <NavLink to={`/orgs/${current.id}/triggers`}>Triggers</NavLink>
            <NavLink to={`/orgs/${current.id}/jobs`}>Jobs</NavLink>
            <NavLink to={`/orgs/${current.id}/batches`}>Batches</NavLink>
            <NavLink to={`/orgs/${current.id}/apps`}>Updates</NavLink>
            <NavLink to={`/orgs/${current.id}/storage`}>Storage</NavLink>
            <NavLink to={`/orgs/${current.id}/integrations`}>Integrations</NavLink>
            <NavLink to={`/orgs/${current.id}/api-tokens`}>API tokens</NavLink>
            <NavLink to={`/orgs/${current.id}/members`}>Members</NavLink>
            {allows(current, 'audit.read') && <NavLink to={`/orgs/${current.id}/audit`}>Audit log</NavLink>}
            <NavLink to={`/orgs/${current.id}/settings`}>Settings</NavLink>
          </nav>
        )}
        <UserMenu email={email} current={current} />
      </header>
      <main id="content" ref={main} tabIndex={-1}>
        <SessionEndedBanner />
        <ErrorMessage error={orgs.error} />
        <Outlet />
      </main>
      <footer className="footer">
        {/* Served by the coordinator, outside the dashboard's own pages. */}
        <a href="/docs">API reference</a>
        <span aria-hidden="true"> · </span>
        <a href="/v1/openapi.json">OpenAPI document</a>
      </footer>
    </div>
  );
}

/**
 * A background read met a session that ended (expired, signed out in another tab): the page stays,
 * with what was typed in it, and this leads to sign-in in a new tab, which returns to this page.
 * Signed in again there, the next read clears it here and the form can be sent.
 */
function SessionEndedBanner() {
  const ended = useSessionEnded();
  const location = useLocation();
  if (!ended) return null;
  const next = location.pathname + location.search;
  return (
    <div role="alert" className="error session-ended">
      <p>
        Your session ended.{' '}
        <a
          href={`/login?${new URLSearchParams({ reason: 'expired', next }).toString()}`}
          target="_blank"
          rel="noopener noreferrer"
        >
          Sign in again (opens the sign-in page in a new tab)
        </a>
        , then come back: what you typed here is kept, and is sent once you are signed in again.
      </p>
    </div>
  );
}

function OrgSwitcher({ orgs, current }: { orgs: Org[]; current: Org | undefined }) {
  const navigate = useNavigate();
  const location = useLocation();
  const switchTo = (id: string) => {
    // The same page in the other organization: /orgs/<old>/agents → /orgs/<new>/agents.
    const rest =
      current && location.pathname.startsWith('/orgs/') ? location.pathname.split('/').slice(3).join('/') : '';
    void navigate(`/orgs/${id}${rest ? `/${rest}` : ''}`);
  };
  return (
    <label className="org-switcher">
      <span className="visually-hidden">Organization</span>
      {/* A long name is cut short with an ellipsis (styles.css): the whole of it is the title. */}
      <select value={current?.id ?? ''} title={current?.name} onChange={(e) => switchTo(e.target.value)}>
        {!current && <option value="">Choose…</option>}
        {orgs.map((o) => (
          <option key={o.id} value={o.id}>
            {o.name}
          </option>
        ))}
      </select>
    </label>
  );
}

function UserMenu({ email, current }: { email: string; current: Org | undefined }) {
  const frame: FrameOrgState = { frameOrgId: current?.id };
  const invitations = useQuery(myInvitationsQuery).data?.length ?? 0;
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const signOut = useMutation({
    mutationFn: () => api<void>('POST', apiPath`/auth/logout`, { expectUnauthorized: true }),
    onSettled: () => {
      queryClient.clear();
      void navigate('/login', { replace: true });
    },
  });
  return (
    <div className="user">
      {/* The signed-in user is the way to their account page (password, sessions, invitations). */}
      <NavLink
        to="/account"
        state={frame}
        className="who account-link"
        title={`Signed in as ${email}${current ? ` (${current.role})` : ''}: your account`}
      >
        <span className="visually-hidden">Signed in as </span>
        <strong>{email}</strong>
        {current && <span className="role"> ({current.role})</span>}
        <span className="visually-hidden">, your account</span>
        {invitations > 0 && (
          <span className="badge">{` · ${invitations} invitation${invitations === 1 ? '' : 's'}`}</span>
        )}
      </NavLink>
      <button type="button" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
        Sign out
      </button>
    </div>
  );
}
