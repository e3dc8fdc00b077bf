import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMutation } from '../lib/mutation';
import { useState, type FormEvent } from 'react';
import { useSearchParams } from 'react-router';
import { ApiError } from '../api/client';
import {
  decideDeviceSignIn,
  deviceSignInQuery,
  normalizeUserCode,
  type DeviceDecision,
  type DeviceSignIn,
} from '../api/device-sign-in';
import { sessionQuery } from '../api/queries';
import { ErrorMessage } from '../components/ErrorMessage';
import { ago, dateTime } from '../components/time';

/**
 * `/device`: where the command line sends its user to sign it in (`/device?code=WDJB-MJHT`). The
 * code is looked up and shown with where the request came from; Approve signs the command line in
 * as the signed-in user, Deny refuses it. A page of no organization: a user who belongs to none
 * (a first single sign-on) uses it too.
 */
export function DeviceSignInPage() {
  const [params, setParams] = useSearchParams();
  const queryClient = useQueryClient();
  const sent = params.get('code') ?? '';
  const code = normalizeUserCode(sent);
  const [typed, setTyped] = useState(code ?? sent.toUpperCase());
  const [invalid, setInvalid] = useState(sent !== '' && code === null);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const normal = normalizeUserCode(typed);
    setInvalid(normal === null);
    if (normal === null) return;
    setTyped(normal);
    // The same code again: asked again (it may have been refused a moment ago).
    if (normal === code) void queryClient.invalidateQueries({ queryKey: deviceSignInQuery(normal).queryKey });
    else setParams({ code: normal }, { replace: true });
  };
  return (
    <section aria-labelledby="device-heading" className="device-sign-in">
      <h1 id="device-heading">Sign in the command line</h1>
      <p>
        The command line shows a code and sends you here to approve it. Type the code (8 letters, with or without the
        hyphen), or check that the one below is the code your terminal shows.
      </p>
      <form className="inline-form" onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor="device-code">Code</label>
          <input
            id="device-code"
            className="device-code-input"
            value={typed}
            onChange={(e) => setTyped(e.target.value.toUpperCase())}
            placeholder="XXXX-XXXX"
            maxLength={16}
            autoComplete="off"
            autoCapitalize="characters"
            spellCheck={false}
            {...(invalid ? { 'aria-invalid': true, 'aria-describedby': 'device-code-error' } : {})}
          />
          {invalid && (
            <span id="device-code-error" className="field-error">
              a code is 8 letters, like WDJB-MJHT
            </span>
          )}
        </div>
        <button type="submit">Look up</button>
      </form>
      {code && <Request key={code} userCode={code} />}
    </section>
  );
}

function Request({ userCode }: { userCode: string }) {
  const request = useQuery(deviceSignInQuery(userCode));
  const email = useQuery(sessionQuery).data?.user.email ?? 'you';
  const decide = useMutation({ mutationFn: (decision: DeviceDecision) => decideDeviceSignIn(userCode, decision) });
  if (decide.data) return <Outcome signIn={decide.data} email={email} />;
  if (request.error) return <DeviceError error={request.error} />;
  if (!request.data) return <p className="loading">Looking up {userCode}…</p>;
  const r = request.data;
  if (r.status !== 'pending') return <AlreadyDecided status={r.status} />;
  return (
    <section className="panel device-request" aria-labelledby="device-request-heading">
      <p className="device-code">
        <span className="visually-hidden">Code </span>
        {r.userCode}
      </p>
      <h2 id="device-request-heading">Sign in the command line as {email}?</h2>
      <dl className="facts">
        {r.client !== null && (
          <>
            <dt>Client</dt>
            <dd>
              <q>{r.client}</q> <span className="hint">(the client&apos;s own words, not checked)</span>
            </dd>
          </>
        )}
        <dt>Requested from</dt>
        <dd>
          <code>{r.requestedFrom}</code>
        </dd>
        <dt>Requested</dt>
        <dd>
          {dateTime(r.requestedAt)} ({ago(r.requestedAt)})
        </dd>
        <dt>Expires</dt>
        <dd>
          {dateTime(r.expiresAt)} ({ago(r.expiresAt)})
        </dd>
      </dl>
      <p className="warning">
        Approve only a code you started yourself, in a terminal, a moment ago. If someone sent you this link or code,
        deny it: approving signs them in as you.
      </p>
      <div className="actions">
        <button type="button" className="primary" onClick={() => decide.mutate('approve')} disabled={decide.isPending}>
          Approve
        </button>
        <button type="button" onClick={() => decide.mutate('deny')} disabled={decide.isPending}>
          Deny
        </button>
      </div>
      {decide.error && <DeviceError error={decide.error} />}
    </section>
  );
}

/** The sign-in as this page decided it. */
function Outcome({ signIn, email }: { signIn: DeviceSignIn; email: string }) {
  return signIn.status === 'approved' ? (
    <div role="status" className="success">
      <p>
        The command line is signed in as <strong>{email}</strong>; you can close this page.
      </p>
    </div>
  ) : (
    <div role="status" className="panel">
      <p>Denied: the command line will not be signed in.</p>
    </div>
  );
}

function DeviceError({ error }: { error: Error }) {
  if (error instanceof ApiError && error.statusCode === 404) {
    return (
      <div role="alert" className="error">
        <p>No sign-in waits for this code: it is wrong, expired (codes last 10 minutes) or already used.</p>
        <p>Check the code your terminal shows, or start the sign-in again there.</p>
      </div>
    );
  }
  if (error instanceof ApiError && error.statusCode === 409) return <AlreadyDecided />;
  return <ErrorMessage error={error} />;
}

/** A sign-in decided before, here or elsewhere (another tab, another user): a 409, or found so. */
function AlreadyDecided({ status = 'approved or denied' }: { status?: string }) {
  return (
    <div role="alert" className="error">
      <p>This sign-in was already {status}: nothing more to do here.</p>
    </div>
  );
}
