import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { sitePath } from '@drover/shared/site-path';
import { api, ApiError, apiPath } from '../api/client';
import { sessionQuery, signInMethodsQuery } from '../api/queries';
import type { OidcRefusal, Session } from '../api/types';
import { ErrorMessage, fieldName } from '../components/ErrorMessage';

interface LoginAnswer extends Session {
  token: string;
}

/** Only an address of this dashboard (sitePath, the coordinator's rule): never send a signed-in user elsewhere. */
export function safeNext(next: string | null): string {
  const path = next ? sitePath(next) : null;
  return path && !path.startsWith('/login') ? path : '/';
}

export function SignInPage() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const signIn = useMutation({
    mutationFn: () =>
      api<LoginAnswer>('POST', apiPath`/auth/login`, { body: { email, password }, expectUnauthorized: true }),
    onSuccess: ({ user, expiresAt }) => {
      queryClient.setQueryData(sessionQuery.queryKey, { user, expiresAt });
      void navigate(next, { replace: true });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    signIn.mutate();
  };
  const methods = useQuery(signInMethodsQuery);
  // Sent here by a call refused 401 while signed in (main.tsx), not by a first visit.
  const expired = params.get('reason') === 'expired' && !signIn.error;
  // Sent back here by a single sign-on the coordinator refused: its reason is read from the
  // coordinator (a cookie it set), never from the address, which anyone's link can fill.
  const ssoRefused = params.get('sso') === 'refused';
  const refusal = useQuery({
    queryKey: ['auth', 'oidc', 'refusal'],
    queryFn: () => api<OidcRefusal>('GET', apiPath`/auth/oidc/refusal`, { expectUnauthorized: true }),
    enabled: ssoRefused,
    staleTime: Infinity,
    retry: false,
  });
  const next = safeNext(params.get('next'));
  // Until the methods are read, the password form (the coordinator refuses it when it is off).
  const passwordOn = methods.data?.password ?? true;
  return (
    <main className="sign-in">
      <h1>Sign in to Drover</h1>
      {expired && <p className="hint">Your session ended; sign in again to continue.</p>}
      {ssoRefused && !refusal.isPending && (
        <div role="alert" className="error">
          <p>{refusal.data?.message ?? 'Single sign-on did not complete; sign in again.'}</p>
        </div>
      )}
      {methods.data?.oidc && (
        <p className="sso">
          <a className="button-link" href={`/v1/auth/oidc/start?${new URLSearchParams({ next }).toString()}`}>
            Sign in with single sign-on
          </a>
        </p>
      )}
      {passwordOn && methods.data?.oidc && <p className="hint">or with your email and password:</p>}
      {passwordOn && (
        <form onSubmit={submit} noValidate>
          <label>
            Email
            <input
              type="email"
              autoComplete="username"
              required
              value={email}
              onChange={(e) => setEmail(e.target.value)}
            />
          </label>
          <label>
            Password
            <input
              type="password"
              autoComplete="current-password"
              required
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
          </label>
          <button type="submit" disabled={signIn.isPending}>
            {signIn.isPending ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
      )}
      {signIn.error && <SignInError error={signIn.error} />}
    </main>
  );
}

function SignInError({ error }: { error: Error }) {
  if (error instanceof ApiError && error.statusCode === 429) {
    const wait = error.retryAfter
      ? ` Try again in ${error.retryAfter} second${error.retryAfter === 1 ? '' : 's'}.`
      : '';
    return (
      <div role="alert" className="error">
        <p>Sign-in is locked for now after too many failed attempts.{wait}</p>
        <p className="hint">{error.message}</p>
      </div>
    );
  }
  if (error instanceof ApiError && error.statusCode === 422) {
    return (
      <div role="alert" className="error">
        <p>Fill in both fields.</p>
        <ul>
          {error.details.map((d) => (
            <li key={d.path}>
              {fieldName(d.path)} {d.message}
            </li>
          ))}
        </ul>
      </div>
    );
  }
  return <ErrorMessage error={error} />;
}
