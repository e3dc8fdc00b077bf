import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
import { auditEntries } from '../helpers/audit.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { acceptInvitation, addUser, fakeClock } from '../helpers/members.js';
import { openRaw } from '../helpers/raw-socket.js';
import { issueApiToken } from '../helpers/tokens.js';

const ROUTES = ['/token', '/agents', '/devices', '/workflows'];
const MINUTE = 60_000;

/** A fake clock at the start of a UTC minute (plus one second), so a test never straddles two windows. */
const minuteAlignedClock = () => fakeClock(Math.floor(Date.now() / MINUTE) * MINUTE + 1_000);

describe('token discovery authentication', () => {
  const clock = minuteAlignedClock();
  let t: TestCoordinator;
  let agent: TestAgent;

  beforeAll(async () => {
    t = await startTestCoordinator({ clock, env: { API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: '100000' } });
    agent = await enrollTestAgent(t.owner, t.orgId);
  });
  afterAll(() => t?.close());

  const expect401 = async (headers: Record<string, string>, why: string) => {
    for (const path of ROUTES) {
      const res = await t.api.get(path, { token: null, headers });
      expect(res.status, `${why}: ${path}`).toBe(401);
      expect(res.body).toEqual({ statusCode: 401, code: 'unauthorized', message: expect.any(String) });
    }
  };

  it('refuses a call without an Authorization header', async () => {
    await expect401({}, 'no header');
  });

  it('refuses malformed Authorization headers', async () => {
    const { token } = await issueApiToken(t.owner, t.orgId, []);
    for (const header of [
      'Bearer',
      'Bearer ',
      `Basic ${token}`,
      `Token ${token}`,
      token,
      `Bearer ${token} extra`,
      `Bearer ${'x'.repeat(5000)}`,
    ]) {
      await expect401({ authorization: header }, `header ${header.slice(0, 30)}`);
    }
  });

  it('refuses a call with two Authorization headers, even when one of them is valid', async () => {
    const { token } = await issueApiToken(t.owner, t.orgId, []);
    // fetch and Node's server both merge or drop a repeated header: the request is written by hand.
    const get = async (authorizations: string[]) => {
      const lines = ['GET /v1/token HTTP/1.1', 'host: localhost', 'connection: close'];
      for (const value of authorizations) lines.push(`authorization: ${value}`);
      const raw = await openRaw(t.url, `${lines.join('\r\n')}\r\n\r\n`);
      await raw.closed;
      return raw.status();
    };
    expect(await get([`Bearer ${token}`])).toBe(200);
    expect(await get([`Bearer ${token}`, `Bearer ${token}`])).toBe(401);
    expect(await get([`Bearer ${token}`, 'Bearer drv_another'])).toBe(401);
    expect(await get(['Bearer drv_another', `Bearer ${token}`])).toBe(401);
  });

  it('says that the Authorization header came twice, where it asked for one it had been sent', async () => {
    const { token } = await issueApiToken(t.owner, t.orgId, []);
    const session = t.owner.token!;
    const answer = async (path: string, authorizations: string[]) => {
      const lines = [`GET ${path} HTTP/1.1`, 'host: localhost', 'connection: close'];
      for (const value of authorizations) lines.push(`authorization: ${value}`);
      const raw = await openRaw(t.url, `${lines.join('\r\n')}\r\n\r\n`);
      await raw.closed;
      const received = raw.received();
      return { status: raw.status(), body: JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)) as unknown };
    };
    const twice = {
      status: 401,
      body: {
        statusCode: 401,
        code: 'unauthorized',
        message:
          'The Authorization header was sent more than once, so none of them is read: send it once, with one credential',
      },
    };
    // The public API (an API token) and a dashboard endpoint (a session).
    expect(await answer('/v1/token', [`Bearer ${token}`, `Bearer ${token}`])).toEqual(twice);
    expect(await answer('/v1/orgs', [`Bearer ${session}`, `Bearer ${session}`])).toEqual(twice);
  });

  it('refuses an unknown token, a truncated one and one without the drv_ prefix', async () => {
    const { token } = await issueApiToken(t.owner, t.orgId, []);
    for (const bad of [
      `drv_${'A'.repeat(43)}`,
      token.slice(0, -1),
      token.replace(/^drv_/, 'drve_'),
      `drv_${'x'.repeat(300)}`,
    ]) {
      await expect401({ authorization: `Bearer ${bad}` }, 'bad token');
    }
  });

  it('refuses a revoked token', async () => {
    const issued = await issueApiToken(t.owner, t.orgId, [{ type: 'agent', agentIds: [agent.agentId] }]);
    expect((await t.api.get('/agents', { token: issued.token })).status).toBe(200);
    const revoked = await t.owner.delete(`/orgs/${t.orgId}/api-tokens/${issued.id}`);
    expect(revoked.status, revoked.text).toBe(200);
    await expect401({ authorization: `Bearer ${issued.token}` }, 'revoked');
  });

  it('refuses a token once its expiry has passed', async () => {
    const expiresAt = new Date(clock.now() + 10 * MINUTE).toISOString();
    const issued = await issueApiToken(t.owner, t.orgId, [{ type: 'agent', agentIds: [agent.agentId] }], { expiresAt });
    expect((await t.api.get('/agents', { token: issued.token })).status).toBe(200);
    clock.advance(10 * MINUTE);
    await expect401({ authorization: `Bearer ${issued.token}` }, 'expired');
  });

  it('refuses a token whose issuer left the organization, and accepts it again once they are back', async () => {
    const member = await addUser(t.owner, t.orgId, 'leaver@example.test');
    const { token } = await issueApiToken(member.client, t.orgId, []);
    expect((await t.api.get('/token', { token })).status).toBe(200);
    expect((await t.owner.delete(`/orgs/${t.orgId}/members/${member.userId}`)).status).toBe(200);
    await expect401({ authorization: `Bearer ${token}` }, 'issuer removed');
    const back = await t.owner.post(`/orgs/${t.orgId}/members`, {
      body: { email: 'leaver@example.test', role: 'member' },
    });
    expect(back.status).toBe(201);
    expect((await t.api.get('/token', { token })).status).toBe(401); // invited, not a member yet
    await acceptInvitation(member.client, back.body.id);
    expect((await t.api.get('/token', { token })).status).toBe(200);
  });

  it('refuses a dashboard session token used as an API token', async () => {
    await expect401({ authorization: `Bearer ${t.owner.token}` }, 'session JWT');
  });

  it('never answers an API token on a dashboard route', async () => {
    const { token } = await issueApiToken(t.owner, t.orgId, []);
    expect((await t.api.get('/orgs', { token })).status).toBe(401);
  });
});

describe('token discovery read limit', () => {
  const clock = minuteAlignedClock();
  let t: TestCoordinator;
  let agent: TestAgent;

  beforeAll(async () => {
    t = await startTestCoordinator({ clock, env: { API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: '3' } });
    agent = await enrollTestAgent(t.owner, t.orgId);
  });
  afterAll(() => t?.close());

  const issue = () => issueApiToken(t.owner, t.orgId, [{ type: 'agent', agentIds: [agent.agentId] }]);
  const auditOf = async (tokenId: string, action: string) => {
    await t.coordinator.ctx.audit.flush(); // the entries of reads are written after the answer
    return (await auditEntries(t.owner, t.orgId, action)).filter((e) => e.actorId === tokenId);
  };
  const expectRefused = (res: { status: number; body: unknown; headers: Headers }, observed: number) => {
    expect(res.status).toBe(429);
    expect(res.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message: `Token read limit exceeded: ${observed} requests this minute, limit 3`,
      scope: 'token_read',
      window: 'minute',
      limit: 3,
      observed,
    });
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  };

  it('refuses the fourth call of a minute with the spec body and a Retry-After header', async () => {
    const { token } = await issue();
    for (let i = 0; i < 3; i++) expect((await t.api.get('/agents', { token })).status).toBe(200);
    const refused = await t.api.get('/agents', { token });
    expectRefused(refused, 4);
    expect(refused.headers.get('retry-after')).toBe('59');
    expectRefused(await t.api.get('/agents', { token }), 5);
  });

  it('counts all four routes against one limit', async () => {
    const { token } = await issue();
    for (const path of ['/token', '/agents', '/devices']) expect((await t.api.get(path, { token })).status).toBe(200);
    expectRefused(await t.api.get('/workflows', { token }), 4);
    for (const path of ROUTES) expect((await t.api.get(path, { token })).status).toBe(429);
  });

  it('counts each token on its own', async () => {
    const first = await issue();
    const second = await issue();
    for (let i = 0; i < 4; i++) await t.api.get('/token', { token: first.token });
    expect((await t.api.get('/token', { token: first.token })).status).toBe(429);
    for (let i = 0; i < 3; i++) expect((await t.api.get('/token', { token: second.token })).status).toBe(200);
  });

  it('does not count calls refused with 401', async () => {
    const issued = await issue();
    for (let i = 0; i < 5; i++) {
      expect((await t.api.get('/agents', { token: `${issued.token}x` })).status).toBe(401);
    }
    expect((await t.api.get('/agents', { token: issued.token })).status).toBe(200);
  });

  it('allows calls again when the next UTC minute starts', async () => {
    const { token } = await issue();
    for (let i = 0; i < 3; i++) await t.api.get('/token', { token });
    expect((await t.api.get('/token', { token })).status).toBe(429);
    clock.advance(30_000);
    expect((await t.api.get('/token', { token })).status).toBe(429);
    clock.advance(MINUTE - 30_000);
    for (let i = 0; i < 3; i++) expect((await t.api.get('/token', { token })).status).toBe(200);
    expectRefused(await t.api.get('/token', { token }), 4);
  });

  it('audits rate_limit.block once per token and window, however many calls are refused', async () => {
    const first = await issue();
    const second = await issue();
    for (let i = 0; i < 7; i++) await t.api.get('/agents', { token: first.token });
    for (let i = 0; i < 5; i++) await t.api.get('/workflows', { token: second.token });
    const blocks = await auditOf(first.id, 'rate_limit.block');
    expect(blocks).toHaveLength(1);
    expect(blocks[0]).toMatchObject({ actorType: 'api_token', actorId: first.id }); // in the org's log
    expect(blocks[0]!.metadata).toMatchObject({ scope: 'token_read', window: 'minute', limit: 3, observed: 4 });
    expect(await auditOf(second.id, 'rate_limit.block')).toHaveLength(1);

    clock.advance(MINUTE);
    for (let i = 0; i < 6; i++) await t.api.get('/agents', { token: first.token });
    expect(await auditOf(first.id, 'rate_limit.block')).toHaveLength(2);
  });

  it('records api_token.discover only for the calls that were answered', async () => {
    const issued = await issue();
    for (let i = 0; i < 6; i++) await t.api.get('/devices', { token: issued.token });
    const discovers = await auditOf(issued.id, 'api_token.discover');
    expect(discovers.map((e) => e.metadata)).toEqual(Array(3).fill({ resource: 'devices', count: 1 }));
  });
});
