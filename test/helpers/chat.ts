import type { TestCoordinator } from './coordinator.js';
import type { ApiClient, ApiResponse } from './http.js';

/** The cookie `connect` binds the OAuth flow to its browser with (docs/chat.md). */
export const CHAT_CONNECT_COOKIE = 'drover_chat_connect';

export interface StartedConnect {
  authorizeUrl: URL;
  state: string;
  /** Where the provider sends the browser back (the authorize URL's `redirect_uri`). */
  redirectUri: URL;
  /** The value of the connect cookie `connect` set: what the starting browser holds. */
  browserKey: string;
}

/** An owner presses Connect (`client`): the provider's consent page, and the cookie the browser got. */
export async function startConnect(
  t: TestCoordinator,
  client: ApiClient,
  provider: 'slack' | 'discord',
  orgId = t.orgId,
): Promise<StartedConnect> {
  const started = await client.post<{ authorizeUrl: string }>(`/orgs/${orgId}/chat-integrations/${provider}/connect`);
  if (started.status !== 200) throw new Error(`connect: ${started.status} ${started.text}`);
  const cookie = started.headers.getSetCookie().find((c) => c.startsWith(`${CHAT_CONNECT_COOKIE}=`));
  if (!cookie) throw new Error(`connect set no ${CHAT_CONNECT_COOKIE} cookie`);
  const authorizeUrl = new URL(started.body.authorizeUrl);
  return {
    authorizeUrl,
    state: authorizeUrl.searchParams.get('state') ?? '',
    redirectUri: new URL(authorizeUrl.searchParams.get('redirect_uri') ?? ''),
    browserKey: cookie.slice(CHAT_CONNECT_COOKIE.length + 1).split(';')[0]!,
  };
}

/**
 * What the browser does once the provider sends it back: the callback (`GET`, which sends it on
 * to the dashboard's finishing page), then that page's call finishing the flow, made by `client`
 * (a session) with the connect cookie `browserKey` (null: none).
 */
export async function finishConnect(
  t: TestCoordinator,
  client: ApiClient,
  provider: 'slack' | 'discord',
  query: Record<string, string>,
  browserKey: string | null,
): Promise<{ callback: Response; completion: ApiResponse }> {
  const redirect = new URL(`${t.url}/v1/chat/${provider}/oauth/callback`);
  for (const [k, v] of Object.entries(query)) redirect.searchParams.set(k, v);
  const callback = await fetch(redirect, { redirect: 'manual' });
  if (callback.status !== 303) throw new Error(`callback: ${callback.status} ${await callback.text()}`);
  const page = new URL(callback.headers.get('location') ?? '');
  const body: Record<string, string> = {};
  for (const name of ['code', 'state', 'error']) {
    const value = page.searchParams.get(name);
    if (value !== null) body[name] = value;
  }
  const completion = await client.post(`/chat/${provider}/oauth/complete`, {
    body,
    headers: browserKey === null ? {} : { cookie: `${CHAT_CONNECT_COOKIE}=${browserKey}` },
  });
  return { callback, completion };
}

/**
 * The OAuth round trip as a browser makes it: the owner starts connecting (`client`), the
 * provider would ask for consent and send the browser back to the redirect URI with a code and
 * the state; here the test goes there directly, then finishes as the dashboard's page does, in
 * the same browser (its connect cookie) and session. Answers the authorize URL, the callback's
 * answer and the finishing call's.
 */
export async function connectWorkspace(
  t: TestCoordinator,
  client: ApiClient,
  provider: 'slack' | 'discord',
  callbackQuery: (state: string) => Record<string, string>,
): Promise<{ authorizeUrl: URL; callback: Response; completion: ApiResponse }> {
  const started = await startConnect(t, client, provider);
  const { callback, completion } = await finishConnect(
    t,
    client,
    provider,
    callbackQuery(started.state),
    started.browserKey,
  );
  return { authorizeUrl: started.authorizeUrl, callback, completion };
}
