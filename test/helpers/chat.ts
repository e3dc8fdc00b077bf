import type { TestCoordinator } from './coordinator.js';
import type { ApiClient } from './http.js';

/**
 * The OAuth round trip as a browser makes it: the owner starts connecting (`client`), the
 * provider would ask for consent and send the browser back to the redirect URI with a code and
 * the state; here the test goes there directly. Answers the authorize URL and the callback's answer.
 */
export async function connectWorkspace(
  t: TestCoordinator,
  client: ApiClient,
  provider: 'slack' | 'discord',
  callbackQuery: (state: string) => Record<string, string>,
): Promise<{ authorizeUrl: URL; callback: Response }> {
  const started = await client.post<{ authorizeUrl: string }>(`/orgs/${t.orgId}/chat-integrations/${provider}/connect`);
  if (started.status !== 200) throw new Error(`connect: ${started.status} ${started.text}`);
  const authorizeUrl = new URL(started.body.authorizeUrl);
  const state = authorizeUrl.searchParams.get('state') ?? '';
  const redirect = new URL(authorizeUrl.searchParams.get('redirect_uri') ?? '');
  for (const [k, v] of Object.entries(callbackQuery(state))) redirect.searchParams.set(k, v);
  const callback = await fetch(redirect, { redirect: 'manual' });
  return { authorizeUrl, callback };
}
