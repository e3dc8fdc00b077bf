import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { api, apiPath } from '../api/client';
import { sessionQuery } from '../api/queries';
import type { Session } from '../api/types';
import { Confirm, useReturnFocus } from '../components/Confirm';
import { ErrorMessage } from '../components/ErrorMessage';
import { FieldError, fieldErrors, FormError } from '../components/FieldErrors';
import { dateTime } from '../components/time';
import { MyInvitations } from './MyInvitations';

/** The signed-in user's own account: their invitations, their password, and their sessions. */
export function AccountPage() {
  const session = useQuery(sessionQuery);
  return (
    <section aria-labelledby="account-heading">
      <h1 id="account-heading">Your account</h1>
      {session.data && (
        <p>
          Signed in as <strong>{session.data.user.email}</strong>; this session ends {dateTime(session.data.expiresAt)}.
        </p>
      )}
      <MyInvitations always />
      <ChangePassword />
      <SignOutEverywhere />
    </section>
  );
}

const PASSWORD_FIELDS = ['currentPassword', 'newPassword'] as const;

function ChangePassword() {
  const [currentPassword, setCurrentPassword] = useState('');
  const [newPassword, setNewPassword] = useState('');
  const [again, setAgain] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const queryClient = useQueryClient();
  const change = useMutation({
    mutationFn: () =>
      api<Session & { token: string }>('POST', apiPath`/auth/password`, { body: { currentPassword, newPassword } }),
    onSuccess: ({ user, expiresAt }) => {
      setCurrentPassword('');
      setNewPassword('');
      setAgain('');
      // The coordinator replaced the session cookie with a new session.
      queryClient.setQueryData(sessionQuery.queryKey, { user, expiresAt });
    },
  });
  const errors = fieldErrors(change.error, PASSWORD_FIELDS, 'body', 'account');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setMismatch(newPassword !== again);
    if (newPassword !== again) return;
    change.mutate();
  };
  return (
    <section aria-labelledby="password-heading" className="panel">
      <h2 id="password-heading">Change your password</h2>
      <p className="hint">
        8 characters or more. Every other session of yours (other browsers, scripts, the command line) is signed out;
        this one goes on. API tokens keep working.
      </p>
      <form onSubmit={submit} noValidate>
        <FormError error={change.error} errors={errors} />
        {change.isSuccess && (
          <p role="status" className="hint">
            Your password is changed, and your other sessions are signed out.
          </p>
        )}
        <div className="form-grid">
          <div className="field">
            <label htmlFor="account-currentPassword">Current password</label>
            <input
              {...errors.props('currentPassword')}
              type="password"
              autoComplete="current-password"
              value={currentPassword}
              onChange={(e) => setCurrentPassword(e.target.value)}
            />
            <FieldError errors={errors} field="currentPassword" idPrefix="account" />
          </div>
          <div className="field">
            <label htmlFor="account-newPassword">New password</label>
            <input
              {...errors.props('newPassword')}
              type="password"
              autoComplete="new-password"
              value={newPassword}
              onChange={(e) => setNewPassword(e.target.value)}
            />
            <FieldError errors={errors} field="newPassword" idPrefix="account" />
          </div>
          <div className="field">
            <label htmlFor="account-again">New password again</label>
            <input
              id="account-again"
              type="password"
              autoComplete="new-password"
              value={again}
              onChange={(e) => setAgain(e.target.value)}
              {...(mismatch ? { 'aria-invalid': true, 'aria-describedby': 'account-again-error' } : {})}
            />
            {mismatch && (
              <span id="account-again-error" className="field-error">
                not the same as the new password
              </span>
            )}
          </div>
        </div>
        <div className="form-actions">
          <button type="submit" disabled={change.isPending}>
            Change password
          </button>
        </div>
      </form>
    </section>
  );
}

function SignOutEverywhere() {
  const [confirming, setConfirming] = useState(false);
  const opener = useReturnFocus(confirming);
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const signOut = useMutation({
    mutationFn: () => api<void>('POST', apiPath`/auth/logout-everywhere`),
    onSuccess: () => {
      queryClient.clear();
      void navigate('/login', { replace: true });
    },
  });
  return (
    <section aria-labelledby="sessions-heading" className="panel">
      <h2 id="sessions-heading">Sessions</h2>
      <p className="hint">
        Lost a laptop, or signed in on a shared machine? Signing out everywhere ends every session of yours: every
        browser, script and command line signed in as you, this one included.
      </p>
      {confirming ? (
        <Confirm label="Sign out everywhere" onCancel={() => setConfirming(false)}>
          <p>Sign out every session of yours, this one included? You will sign in again with your password.</p>
          <button type="button" className="danger" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
            Sign out everywhere
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Stay signed in
          </button>
          <ErrorMessage error={signOut.error} />
        </Confirm>
      ) : (
        <button type="button" ref={opener} onClick={() => setConfirming(true)}>
          Sign out everywhere…
        </button>
      )}
    </section>
  );
}
