import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiResponse } from '../helpers/http.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * The caller is judged before the body (spec: Authentication rule 1; CONTRACT §5;
 * docs/errors.md): a request without valid credentials is 401 whatever it sends, and one without
 * the right is 403 before its body is read.
 */

const BAD_BODIES: { type: string; raw: string }[] = [
  { type: 'application/json', raw: '{bad' },
  { type: 'text/plain', raw: 'x' },
  { type: 'application/json', raw: '{"__proto__":{"a":1}}' },
];

function expectRefused(res: ApiResponse, status: number, challenge?: RegExp): void {
  expect(res.status, res.text).toBe(status);
  expect(res.body.code).toBe(status === 401 ? 'unauthorized' : 'forbidden');
  if (challenge) expect(res.headers.get('www-authenticate')).toMatch(challenge);
}

describe('the order of refusals', () => {
  let t: TestCoordinator;
  let agent: TestAgent;
  let noTriggerGrant: string;
  let readOnly: string;
  beforeAll(async () => {
    t = await startTestCoordinator();
    agent = await enrollTestAgent(t.owner, t.orgId);
    noTriggerGrant = (await issueApiToken(t.owner, t.orgId, [{ type: 'agent', agentIds: [agent.agentId] }])).token;
    readOnly = (await issueApiToken(t.owner, t.orgId, [{ type: 'storage', bindingIds: null, permissions: ['read'] }]))
      .token;
  });
  afterAll(() => t?.close());

  const send = (method: 'POST' | 'GET', path: string, token: string | null, body: { type: string; raw: string }) =>
    method === 'GET'
      ? t.api.get(path, { token })
      : t.api.post(path, { token, rawBody: body.raw, headers: { 'content-type': body.type } });

  it('answers a trigger run without a valid token with 401, whatever the body', async () => {
    for (const body of BAD_BODIES) {
      for (const token of [null, 'drv_nope']) {
        expectRefused(await send('POST', `/triggers/${randomUUID()}/run`, token, body), 401, /^Bearer /);
      }
      // Too large as well: the token is checked before the body is read.
      const huge = { type: 'application/json', raw: `{"params":{"x":"${'a'.repeat(2 * 1024 * 1024)}"}}` };
      expectRefused(await send('POST', `/triggers/${randomUUID()}/run`, null, huge), 401);
    }
  });

  it('answers a trigger run by a token without a trigger grant with 403 before the body', async () => {
    for (const body of BAD_BODIES) {
      expectRefused(await send('POST', `/triggers/${randomUUID()}/run`, noTriggerGrant, body), 403);
    }
  });

  it('checks the token and the storage permission before the body of a storage call', async () => {
    for (const body of BAD_BODIES) {
      expectRefused(await send('POST', '/storage/files/presign-upload', null, body), 401, /^Bearer /);
      expectRefused(await send('POST', '/storage/files/presign-upload', readOnly, body), 403);
    }
  });

  it('checks the token before the query string of a discovery call', async () => {
    expectRefused(await t.api.get('/agents?foo=1', { token: null }), 401, /^Bearer /);
    expectRefused(await t.api.get('/token?foo=1', { token: 'drv_nope' }), 401);
  });

  it('checks the session before the body of a dashboard call', async () => {
    for (const body of BAD_BODIES) {
      expectRefused(await send('POST', `/orgs/${t.orgId}/apps`, null, body), 401, /^Bearer /);
      expectRefused(await send('POST', `/orgs/${t.orgId}/api-tokens`, readOnly, body), 401);
    }
  });

  it('checks the agent signature before judging the body', async () => {
    for (const body of BAD_BODIES) {
      expectRefused(await send('POST', '/agent/deploy/report', null, body), 401, /^Signature /);
      const signedWrong = await agent.request('POST', '/v1/agent/deploy/report', undefined, {
        rawBody: body.raw,
        signBody: '{}',
      });
      expectRefused(signedWrong as ApiResponse, 401);
    }
    // Signed correctly, the same body is judged: 422.
    const signed = await agent.request('POST', '/v1/agent/deploy/report', undefined, { rawBody: '{bad' });
    expect(signed.status).toBe(422);
  });

  it('judges the body once the caller passed', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/apps`, { rawBody: '{bad' });
    expect(res.status).toBe(422);
    expect(res.body.details).toEqual([{ path: 'body', message: 'is not valid JSON' }]);
  });
});
