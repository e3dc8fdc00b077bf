import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';

/**
 * Authentication belongs to route groups (app.ts): a route is in the public API group (API token),
 * the agent group (signature), the management group or the dashboard pages (session), or in the
 * short list of calls that carry their own credential. This holds for every route the coordinator
 * serves, read from its own OpenAPI document: a new route cannot be silently public.
 */

/** The only operations without credentials, each with a reason; adding one is a deliberate change. */
const ANONYMOUS = [
  'POST /v1/auth/login', // signs in
  'POST /v1/auth/logout', // clears the session cookie, signed in or not
  'GET /v1/auth/methods', // which sign-in methods the sign-in page offers
  'GET /v1/auth/oidc/start', // single sign-on: sends the browser to the provider
  'GET /v1/auth/oidc/callback', // single sign-on: the single-use state, and the provider's ID token
  'GET /v1/auth/oidc/refusal', // why this browser's last single sign-on was refused (its own cookie)
  'POST /v1/auth/device', // the command line starts a sign-in through the browser (limited per address)
  'POST /v1/auth/device/token', // its poll: the device code in the body
  'POST /v1/agent/enroll', // the enrollment token in the body
  'GET /v1/storage/blobs/{fileId}', // a presigned URL: its own HMAC signature
  'PUT /v1/storage/blobs/{fileId}',
  'GET /v1/chat/{provider}/oauth/callback', // decides nothing: sends the browser on to the dashboard's page
  'POST /v1/chat/slack/commands', // Slack's request signature
  'POST /v1/chat/slack/events',
  'POST /v1/chat/discord/interactions', // Discord's request signature
];

interface Operation {
  security?: Record<string, string[]>[];
}

describe('route security', () => {
  let t: TestCoordinator;
  let operations: { method: string; path: string; op: Operation }[];
  beforeAll(async () => {
    t = await startTestCoordinator();
    const doc = (await t.api.get('/openapi.json')).body as { paths: Record<string, Record<string, Operation>> };
    operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
    );
  });
  afterAll(() => t?.close());

  it('declares no security only on the known anonymous calls', () => {
    expect(operations.length).toBeGreaterThan(50);
    const open = operations.filter((o) => (o.op.security ?? []).length === 0).map((o) => `${o.method} ${o.path}`);
    expect(open.sort()).toEqual([...ANONYMOUS].sort());
  });

  it('refuses an anonymous call to every other operation with 401, before looking at the body', async () => {
    const refused: string[] = [];
    for (const { method, path, op } of operations) {
      if ((op.security ?? []).length === 0) continue;
      const url = `${t.url}${path.replace(/\{[^}]+\}/g, () => randomUUID())}`;
      const res = await fetch(url, {
        method,
        ...(method === 'GET' ? {} : { headers: { 'content-type': 'application/json' }, body: '{"not":"checked"}' }),
      });
      const body = (await res.json()) as { code?: string };
      if (res.status !== 401 || body.code !== 'unauthorized' || !res.headers.get('www-authenticate')) {
        refused.push(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
      }
    }
    expect(refused).toEqual([]);
  });
});
