import { CliError } from './errors.js';
import { Api } from './http/api.js';
import { warnPlainHttp } from './http/plain-http.js';
import type { Runtime } from './runtime.js';
import { resolveOrgId } from './session/org.js';
import { readSession, sessionExpired, type StoredSession } from './session/store.js';
import type { Settings } from './settings.js';

/**
 * Who calls the API: an API token (the public API) or a signed-in user (the management API, in
 * one organization). Commands that both can run take whichever is given, the token first.
 */
export type Caller = TokenCaller | SessionCaller;

export interface TokenCaller {
  kind: 'token';
  api: Api;
}

export interface SessionCaller {
  kind: 'session';
  api: Api;
  session: StoredSession;
  /** The organization to work in (resolved once, on first use). */
  orgId(): Promise<string>;
}

const NO_URL = 'no coordinator URL: pass --url or set DROVER_URL';

/**
 * The API token's caller; an error saying what is missing when there is no token or URL. The
 * coordinator is `--url` or `DROVER_URL`, else the one `drover login` signed in to (the session
 * file's URL, whether or not the session is still valid): only the URL is taken from the session,
 * the call carries the API token alone.
 */
export function tokenCaller(settings: Settings, rt: Runtime): TokenCaller {
  if (settings.token === null) throw new CliError('this command needs an API token: pass --token or set DROVER_TOKEN');
  const url = settings.url ?? readSession(settings.configDir)?.url ?? null;
  if (url === null) throw new CliError(NO_URL);
  warnPlainHttp(rt, url, 'the API token');
  return { kind: 'token', api: new Api(url, settings.token, rt.signal) };
}

/** The signed-in user's caller, or null when there is no session (an expired or foreign one is an error). */
export function optionalSessionCaller(settings: Settings, rt: Runtime): SessionCaller | null {
  const session = readSession(settings.configDir);
  if (session === null) return null;
  if (settings.url !== null && settings.url !== session.url) {
    throw new CliError(
      `the session is for ${session.url}, not ${settings.url}: sign in there with \`drover login --url ${settings.url}\``,
    );
  }
  if (sessionExpired(session)) {
    throw new CliError(
      `the session of ${session.email} on ${session.url} expired at ${session.expiresAt}; sign in again with \`drover login\``,
    );
  }
  warnPlainHttp(rt, session.url, 'the session');
  const api = new Api(session.url, session.token, rt.signal);
  let org: Promise<string> | undefined;
  return { kind: 'session', api, session, orgId: () => (org ??= resolveOrgId(api, settings.org)) };
}

/** The signed-in user's caller; an error when nobody signed in. */
export function sessionCaller(settings: Settings, rt: Runtime): SessionCaller {
  const caller = optionalSessionCaller(settings, rt);
  if (caller === null)
    throw new CliError(
      'this command needs a session: sign in with `drover login --email <email>` or `drover login --browser`',
    );
  return caller;
}

/** An API token when one is given, else the session; an error when there is neither. */
export function anyCaller(settings: Settings, rt: Runtime): Caller {
  if (settings.token !== null) return tokenCaller(settings, rt);
  const session = optionalSessionCaller(settings, rt);
  if (session) return session;
  throw new CliError(
    'no credentials: pass an API token (--token or DROVER_TOKEN) or sign in with `drover login --email <email>` or `drover login --browser`',
  );
}
