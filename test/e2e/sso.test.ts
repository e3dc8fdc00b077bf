import fs from 'node:fs';
import type { JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@drover/coordinator';
import { mappedOrg } from '../../coordinator/src/domain/auth/role-map.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { acceptInvitation, addUser, outsider } from '../helpers/members.js';
import { issueApiToken } from '../helpers/tokens.js';
import { startOidcProvider, type TestAccount, type TestOidcProvider } from '../helpers/oidc-provider.js';
import { Agent, fetch as undiciFetch } from 'undici';

/**
 * Single sign-on against a real OpenID provider (docs/sso.md): the authorization code flow with
 * PKCE, the user made from the verified email and put in organizations by the role map, the same
 * session as a password sign-in; and each refusal: a replayed state, another browser, a wrong
 * audience, an expired ID token, a wrong nonce, a forged signature, an email not verified or of a
 * domain not allowed, a `next` of another site.
 */

const ACCOUNTS: Record<string, TestAccount> = {
  ada: { email: 'ada@example.test', groups: ['ops', 'staff'] },
  bob: { email: 'bob@example.test', groups: ['readers'] },
  eve: { email: 'eve@elsewhere.test', groups: ['ops'] },
  una: { email: 'una@example.test', email_verified: false },
  // As Microsoft Entra ID signs them in: no `email_verified`; `xms_edov` once the optional claim is added.
  mia: { email: 'mia@example.test', email_verified: undefined, xms_edov: true },
  noa: { email: 'noa@example.test', email_verified: undefined },
  ona: { email: 'ona@example.test', email_verified: false, xms_edov: true },
  cyd: { email: 'cyd@example.test', groups: ['ops'] },
  dan: { email: 'dan@example.test', groups: ['readers'] },
  tia: { email: 'tia@example.test', groups: ['twins'] },
  kim: { email: 'kim@example.test', groups: ['acme-admins', 'readers'] },
  lea: { email: 'lea@example.test', groups: ['ops'] },
  ivy: { email: 'ivy@example.test', groups: ['ops'] },
  fay: { email: 'fay@example.test', groups: ['forks'] },
};

let provider: TestOidcProvider;
let t: TestCoordinator;

beforeAll(async () => {
  provider = await startOidcProvider(ACCOUNTS);
  t = await startTestCoordinator({
    env: {
      ...provider.env,
      DROVER_OIDC_ALLOWED_DOMAINS: 'example.test',
      DROVER_OIDC_ROLE_MAP: JSON.stringify({
        ops: { org: 'acme', role: 'operator' },
        staff: { org: 'acme', role: 'viewer' },
        readers: { org: 'acme', role: 'viewer' },
        ghosts: { org: 'no such org', role: 'owner' },
        twins: { org: 'twins', role: 'owner' },
        forks: { org: 'forks', role: 'member' },
      }),
    },
  });
  provider.attach(`${t.url}/v1/auth/oidc/callback`);
});
afterAll(async () => {
  await t?.close();
  await provider?.close();
});

/** `GET /v1/auth/oidc/start`: the provider's address and the browser's sign-in cookie. */
async function start(next = '/orgs', headers: Record<string, string> = {}) {
  const res = await fetch(`${t.url}/v1/auth/oidc/start?next=${encodeURIComponent(next)}`, {
    redirect: 'manual',
    headers,
  });
  expect(res.status, await res.clone().text()).toBe(302);
  const cookie = res.headers
    .getSetCookie()
    .find((c) => c.startsWith('drover_oidc='))!
    .split(';')[0]!;
  return { authorize: new URL(res.headers.get('location')!), cookie };
}

/** A whole sign-in as `login`: the coordinator's answer to the provider's redirect back. */
async function signIn(login: string, options: { next?: string; headers?: Record<string, string> } = {}) {
  const started = await start(options.next);
  const back = await provider.signInAs(login, started.authorize.href);
  const res = await fetch(back, { redirect: 'manual', headers: { cookie: started.cookie, ...options.headers } });
  return { res, back, cookie: started.cookie };
}

const sessionOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .find((c) => c.startsWith('drover_session='))
    ?.split(';')[0];

async function refusal(res: Response): Promise<string> {
  expect(res.status).toBe(401);
  const body = (await res.json()) as { code: string; message: string };
  expect(body.code).toBe('sso_failed');
  expect(sessionOf(res)).toBeUndefined();
  return body.message;
}

describe('single sign-on', () => {
  it('says which sign-in methods are on, without credentials', async () => {
    expect((await t.api.get('/auth/methods', { token: null })).body).toEqual({ password: true, oidc: true });
  });

  it('sends the browser to the provider with PKCE S256, a state and a nonce', async () => {
    const { authorize, cookie } = await start();
    expect(authorize.origin).toBe(provider.issuer);
    const q = authorize.searchParams;
    expect(q.get('response_type')).toBe('code');
    expect(q.get('client_id')).toBe(provider.clientId);
    expect(q.get('redirect_uri')).toBe(`${t.url}/v1/auth/oidc/callback`);
    expect(q.get('scope')).toBe('openid email profile');
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookie).toMatch(/^drover_oidc=[A-Za-z0-9_-]{43}$/);
  });

  it('creates the user by email on a first sign-in, applies the role map, and starts a dashboard session', async () => {
    const { res } = await signIn('ada', { next: '/orgs?x=1' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/orgs?x=1');
    const session = sessionOf(res)!;
    expect(session).toMatch(/^drover_session=/);
    const me = await t.api.get('/auth/session', { token: session.slice('drover_session='.length) });
    expect(me.body.user.email).toBe('ada@example.test');
    // ops → operator and staff → viewer in acme: the higher role; the unknown organization is skipped.
    const orgs = await t.api.get('/orgs', { token: session.slice('drover_session='.length) });
    expect(orgs.body).toEqual([expect.objectContaining({ id: t.orgId, name: 'acme', role: 'operator' })]);
    const audit = (await t.owner.get(`/orgs/${t.orgId}/audit`)).body as { action: string; metadata: object }[];
    expect(audit.find((e) => e.action === 'member.add')?.metadata).toEqual({
      email: 'ada@example.test',
      via: 'sso',
      group: 'ops',
      role: 'operator',
    });
    // An account made by single sign-on has no password.
    const login = await t.api.post('/auth/login', { token: null, body: { email: 'ada@example.test', password: 'x' } });
    expect(login.status).toBe(401);
  });

  it("removes a password the inviter chose, and the sessions it opened, at the holder's first sign-in", async () => {
    // Anyone signed in can own an organization, and invite an email nobody has signed in with yet,
    // choosing the first password of the account that makes.
    const mallory = await outsider(t.owner, t.orgId, 'mallory@elsewhere.test');
    const invite = (email: string) =>
      mallory.client.post<{ id: string }>(`/orgs/${mallory.orgId}/members`, {
        body: { email, password: 'mallory-knows-this', role: 'member' },
      });
    const login = (email: string, password = 'mallory-knows-this') =>
      t.api.post<{ token: string }>('/auth/login', { token: null, body: { email, password } });
    const invited = await invite('cyd@example.test');
    expect(invited.status).toBe(201);
    const before = await login('cyd@example.test');
    expect(before.status).toBe(200);
    // Signed in with the password she chose, the inviter joins as the account and issues an API token.
    const asCyd = t.api.withToken(before.body.token);
    await acceptInvitation(asCyd, invited.body.id);
    const kept = await issueApiToken(asCyd, mallory.orgId, [
      { type: 'storage', bindingIds: null, permissions: ['read'] },
    ]);
    expect((await t.api.get('/token', { token: kept.token })).status).toBe(200);
    // And, owning an organization as the account, invites a second email of hers as an owner.
    const cydsOrg = (await asCyd.post<{ id: string }>('/orgs', { body: { name: 'cyd org' } })).body.id;
    const backdoor = await asCyd.post<{ id: string }>(`/orgs/${cydsOrg}/members`, {
      body: { email: 'mallory.again@elsewhere.test', password: 'mallory-knows-this', role: 'owner' },
    });
    expect(backdoor.status).toBe(201);

    // The holder signs in through the provider (and the role map makes them an operator of acme).
    const { res } = await signIn('cyd');
    expect(res.status).toBe(303);
    expect((await login('cyd@example.test')).status).toBe(401);
    expect((await t.api.get('/orgs', { token: before.body.token })).status).toBe(401);
    // The API tokens the account issued end too (whoever held the inviter's password may have made them).
    expect((await t.api.get('/token', { token: kept.token })).status).toBe(401);
    const revoked = (await mallory.client.get(`/orgs/${mallory.orgId}/audit?action=api_token.revoke`)).body as {
      targetId: string;
      metadata: object;
    }[];
    expect(revoked.map((e) => [e.targetId, e.metadata])).toEqual([
      [kept.id, { name: 'test token', via: 'sso', reason: "the account's first single sign-on" }],
    ]);
    const session = sessionOf(res)!.slice('drover_session='.length);
    expect((await t.api.get('/orgs', { token: session })).body).toEqual([
      expect.objectContaining({ name: 'acme', role: 'operator' }),
      expect.objectContaining({ id: mallory.orgId, role: 'member' }),
      expect.objectContaining({ id: cydsOrg, role: 'owner' }),
    ]);
    // The invitations the account sent end too: none lets the inviter's second email in.
    expect((await t.api.get(`/orgs/${cydsOrg}/invitations`, { token: session })).body).toEqual([]);
    const again = await login('mallory.again@elsewhere.test');
    const accepted = await t.api.post(`/invitations/${backdoor.body.id}/accept`, { token: again.body.token });
    expect(accepted.status).toBe(410);
    const ended = (await t.api.get(`/orgs/${cydsOrg}/audit?action=invitation.revoke`, { token: session })).body as {
      targetId: string;
      metadata: object;
    }[];
    expect(ended.map((e) => [e.targetId, e.metadata])).toEqual([
      [
        backdoor.body.id,
        {
          email: 'mallory.again@elsewhere.test',
          role: 'owner',
          expiresAt: expect.any(String),
          via: 'sso',
          reason: "the account's first single sign-on",
        },
      ],
    ]);

    // A changed password goes too: the inviter, who knew the first one, could have changed it.
    expect((await invite('dan@example.test')).status).toBe(201);
    const dan = await login('dan@example.test');
    const changed = await t.api.post('/auth/password', {
      token: dan.body.token,
      body: { currentPassword: 'mallory-knows-this', newPassword: 'mallory-second-pass' },
    });
    expect(changed.status).toBe(200);
    const changedSession = (changed.body as { token: string }).token;
    expect((await signIn('dan')).res.status).toBe(303);
    expect((await login('dan@example.test', 'mallory-second-pass')).status).toBe(401);
    expect((await t.api.get('/auth/session', { token: changedSession })).status).toBe(401);
  });

  it('maps no organization by a name two organizations have: an impostor cannot take the group by naming an org so', async () => {
    const impostor = await outsider(t.owner, t.orgId, 'impostor@elsewhere.test');
    // Anyone signed in may create an organization of any name; first the impostor, then the real one.
    expect((await impostor.client.post('/orgs', { body: { name: 'twins' } })).status).toBe(201);
    const real = await t.owner.post<{ id: string }>('/orgs', { body: { name: 'twins' } });
    const { res } = await signIn('tia');
    expect(res.status).toBe(303);
    const token = sessionOf(res)!.slice('drover_session='.length);
    expect((await t.api.get('/orgs', { token })).body).toEqual([]);

    // By its id (any case), the organization is the one meant; a name only one has still maps.
    const repos = t.coordinator.ctx.repos;
    const silent = createLogger('silent');
    expect((await mappedOrg(repos.orgs, silent, real.body.id.toUpperCase(), 'twins'))?.id).toBe(real.body.id);
    expect(await mappedOrg(repos.orgs, silent, 'twins', 'twins')).toBeNull();
    expect((await mappedOrg(repos.orgs, silent, 'acme', 'ops'))?.id).toBe(t.orgId);
    expect(await mappedOrg(repos.orgs, silent, '00000000-0000-4000-8000-000000000000', 'ops')).toBeNull();
  });

  it("withdraws the map's grant once the person signs in with no group naming the organization, and audits it", async () => {
    type Listed = { userId: string; email: string; role: string; ssoGroup: string | null };
    const member = async (email: string) =>
      ((await t.owner.get(`/orgs/${t.orgId}/members`)).body as Listed[]).find((m) => m.email === email);
    // lea joins by the map; ivy, invited as a viewer, is made an operator by it.
    expect((await signIn('lea')).res.status).toBe(303);
    const ivy = await addUser(t.owner, t.orgId, 'ivy@example.test', 'viewer');
    expect((await signIn('ivy')).res.status).toBe(303);
    expect(await member('lea@example.test')).toMatchObject({ role: 'operator', ssoGroup: 'ops' });
    expect(await member('ivy@example.test')).toMatchObject({ role: 'operator', ssoGroup: 'ops' });

    try {
      // In too many groups, Microsoft Entra ID names none but where to read them: nothing withdrawn.
      ACCOUNTS.lea!.groups = [];
      provider.tamper = ({ groups: _groups, ...claims }) => ({
        ...claims,
        _claim_names: { groups: 'src1' },
        _claim_sources: { src1: { endpoint: 'https://graph.microsoft.com/v1.0/users/lea/getMemberObjects' } },
      });
      try {
        expect((await signIn('lea')).res.status).toBe(303);
      } finally {
        provider.tamper = null;
      }
      expect(await member('lea@example.test')).toMatchObject({ role: 'operator', ssoGroup: 'ops' });

      // Out of ops, in twins, whose entry names no single organization (an impostor made a second
      // twins above): that keeps nothing of acme, whatever anyone names their organizations.
      ACCOUNTS.lea!.groups = ['twins'];
      ACCOUNTS.ivy!.groups = ['not in the map'];
      const lea = sessionOf((await signIn('lea')).res)!.slice('drover_session='.length);
      expect((await signIn('ivy')).res.status).toBe(303);
      // The map added lea: she is no member any more; ivy has the role her invitation gave.
      expect(await member('lea@example.test')).toBeUndefined();
      expect((await t.api.get('/orgs', { token: lea })).body).toEqual([]);
      expect(await member('ivy@example.test')).toMatchObject({ role: 'viewer', ssoGroup: null });
    } finally {
      ACCOUNTS.lea!.groups = ['ops'];
      ACCOUNTS.ivy!.groups = ['ops'];
    }
    const audit = (await t.owner.get(`/orgs/${t.orgId}/audit`)).body as {
      action: string;
      targetId: string;
      metadata: object;
    }[];
    expect(audit.find((e) => e.action === 'member.remove')?.metadata).toEqual({
      email: 'lea@example.test',
      via: 'sso',
      group: 'ops',
      reason: 'sso_group_left',
      role: 'operator',
    });
    expect(audit.find((e) => e.action === 'member.update' && e.targetId === ivy.userId)?.metadata).toEqual({
      email: 'ivy@example.test',
      via: 'sso',
      group: 'ops',
      reason: 'sso_group_left',
      from: 'operator',
      to: 'viewer',
    });
  });

  it('keeps what the map gave in an organization whose name its entry names, once a second organization has that name', async () => {
    const forks = await t.owner.post<{ id: string }>('/orgs', { body: { name: 'forks' } });
    const session = async () => sessionOf((await signIn('fay')).res)!.slice('drover_session='.length);
    const orgsOf = async (token: string) =>
      ((await t.api.get('/orgs', { token })).body as { id: string }[]).map((o) => o.id);
    expect(await orgsOf(await session())).toEqual([forks.body.id]);
    // Anyone may make a second forks: which one the entry means is not known, so fay stays where she is.
    const copycat = await outsider(t.owner, t.orgId, 'copycat@elsewhere.test');
    expect((await copycat.client.post('/orgs', { body: { name: 'forks' } })).status).toBe(201);
    expect(await orgsOf(await session())).toEqual([forks.body.id]);
    // Out of the group, she leaves it.
    ACCOUNTS.fay!.groups = [];
    try {
      expect(await orgsOf(await session())).toEqual([]);
    } finally {
      ACCOUNTS.fay!.groups = ['forks'];
    }
  });

  it('moves the role when the groups change at the provider, and audits it', async () => {
    ACCOUNTS.ada!.groups = ['readers'];
    try {
      expect((await signIn('ada')).res.status).toBe(303);
    } finally {
      ACCOUNTS.ada!.groups = ['ops', 'staff'];
    }
    const members = (await t.owner.get(`/orgs/${t.orgId}/members`)).body as { email: string; role: string }[];
    expect(members.find((m) => m.email === 'ada@example.test')?.role).toBe('viewer');
    const audit = (await t.owner.get(`/orgs/${t.orgId}/audit`)).body as { action: string; metadata: object }[];
    expect(audit.find((e) => e.action === 'member.update')?.metadata).toMatchObject({ from: 'operator', to: 'viewer' });
  });

  it('revokes the pending invitations of an owner the role map demotes, and audits why', async () => {
    const users = (await t.owner.get(`/orgs/${t.orgId}/members`)).body as { userId: string; email: string }[];
    const ada = users.find((m) => m.email === 'ada@example.test')!.userId;
    expect((await t.owner.patch(`/orgs/${t.orgId}/members/${ada}`, { body: { role: 'owner' } })).status).toBe(200);
    const session = sessionOf((await signIn('ada')).res)!.slice('drover_session='.length);
    // Signed in again, the map moved ada back to operator: sign in as an owner first, then invite.
    expect((await t.owner.patch(`/orgs/${t.orgId}/members/${ada}`, { body: { role: 'owner' } })).status).toBe(200);
    const invited = await t.api.post<{ id: string }>(`/orgs/${t.orgId}/members`, {
      token: session,
      body: { email: 'ada.friend@example.test', role: 'owner' },
    });
    expect(invited.status).toBe(201);
    expect((await signIn('ada')).res.status).toBe(303); // ops and staff: operator
    const pending = (await t.owner.get(`/orgs/${t.orgId}/invitations`)).body as { id: string }[];
    expect(pending.map((i) => i.id)).not.toContain(invited.body.id);
    const audit = (await t.owner.get(`/orgs/${t.orgId}/audit?action=invitation.revoke`)).body as {
      targetId: string;
      actorId: string;
      metadata: object;
    }[];
    expect(audit.find((e) => e.targetId === invited.body.id)).toMatchObject({
      actorId: ada,
      metadata: { reason: 'inviter_not_owner', via: 'sso', role: 'owner' },
    });
  });

  it('refuses a replayed state: the sign-in is used up', async () => {
    const first = await signIn('bob');
    expect(first.res.status).toBe(303);
    const again = await fetch(first.back, { redirect: 'manual', headers: { cookie: first.cookie } });
    expect(await refusal(again)).toContain('already used');
  });

  it('refuses a callback from another browser than the one that started', async () => {
    const started = await start();
    const back = await provider.signInAs('bob', started.authorize.href);
    const elsewhere = await fetch(back, { redirect: 'manual' });
    expect(await refusal(elsewhere)).toContain('another browser');
  });

  describe.each([
    ['a wrong audience', { tamper: (c: JWTPayload) => ({ ...c, aud: 'another-client' }) }, /aud/],
    [
      'an expired ID token',
      {
        tamper: (c: JWTPayload) => ({
          ...c,
          iat: Math.floor(Date.now() / 1000) - 7200,
          exp: Math.floor(Date.now() / 1000) - 3600,
        }),
      },
      /exp/,
    ],
    ['a nonce mismatch', { tamper: (c: JWTPayload) => ({ ...c, nonce: 'not-the-one-sent' }) }, /nonce/],
    ['a signature by another key', { tamper: (c: JWTPayload) => c, stranger: true }, /signature/i],
  ] as const)('an ID token with %s', (_what, change, reason) => {
    it('is refused, and nobody is signed in', async () => {
      provider.tamper = change.tamper;
      provider.signWithStranger = 'stranger' in change;
      try {
        const { res } = await signIn('bob');
        expect(await refusal(res)).toMatch(reason);
      } finally {
        provider.tamper = null;
        provider.signWithStranger = false;
      }
    });
  });

  it('refuses an email of a domain not allowed, and one the provider has not verified', async () => {
    expect(await refusal((await signIn('eve')).res)).toBe(
      'Single sign-on did not complete: the email domain elsewhere.test is not allowed to sign in here (allowed: example.test)',
    );
    expect(await refusal((await signIn('una')).res)).toContain('has not verified the email una@example.test');
    expect((await t.sql.get('SELECT count(*) AS n FROM users WHERE email = ?', 'eve@elsewhere.test'))?.n).toBe(0);
  });

  it("takes Microsoft Entra ID's xms_edov for a verified email when the provider sends no email_verified at all", async () => {
    const { res } = await signIn('mia');
    expect(res.status, await res.clone().text()).toBe(303);
    const me = await t.api.get('/auth/session', { token: sessionOf(res)!.slice('drover_session='.length) });
    expect(me.body.user.email).toBe('mia@example.test');
    // Neither claim: refused; `email_verified: false` is never overridden by xms_edov.
    expect(await refusal((await signIn('noa')).res)).toContain('has not verified the email noa@example.test');
    expect(await refusal((await signIn('ona')).res)).toContain('has not verified the email ona@example.test');
  });

  it('goes only to paths of this site after signing in', async () => {
    // The last three are `//evil.test…` once their dot segments are normalized away.
    for (const next of [
      '//evil.test/x',
      'https://evil.test/',
      '/\\evil.test',
      'orgs',
      '/.//evil.test',
      '/a/..//evil.test',
      '/%2e//evil.test/x',
    ]) {
      const res = await fetch(`${t.url}/v1/auth/oidc/start?next=${encodeURIComponent(next)}`, { redirect: 'manual' });
      expect(res.status, next).toBe(422);
      expect(((await res.json()) as { details: { path: string }[] }).details[0]!.path).toBe('query.next');
    }
  });

  it('sends a browser back to the sign-in page with the reason instead of JSON', async () => {
    const started = await start();
    const back = await provider.signInAs('eve', started.authorize.href);
    const res = await fetch(back, {
      redirect: 'manual',
      headers: { cookie: started.cookie, accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
    });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!, t.url);
    // The reason never travels in the address: a link anyone writes could fill it.
    expect(`${location.pathname}${location.search}`).toBe('/login?sso=refused');
    const refusal = res.headers.getSetCookie().find((c) => c.startsWith('drover_sso_refusal='));
    expect(refusal).toMatch(/; Path=\/v1\/auth\/oidc; .*HttpOnly/);
    const read = async (cookie: string) =>
      (await (await fetch(`${t.url}/v1/auth/oidc/refusal`, { headers: { cookie } })).json()) as {
        message: string | null;
      };
    expect((await read(refusal!.split(';')[0]!)).message).toBe(
      'Single sign-on did not complete: the email domain elsewhere.test is not allowed to sign in here (allowed: example.test)',
    );
    expect((await read('')).message).toBeNull();

    // The next attempt starts without it.
    const again = await fetch(`${t.url}/v1/auth/oidc/start`, { redirect: 'manual', headers: { cookie: refusal! } });
    expect(again.headers.getSetCookie().find((c) => c.startsWith('drover_sso_refusal='))).toMatch(
      /Max-Age=0|Expires=Thu, 01 Jan 1970/,
    );
  });

  it('says the provider is unavailable (503), not that it refused the person, when it is down or its token endpoint fails', async () => {
    const unavailable = `The OpenID provider at ${provider.issuer} could not be reached or answered badly; try again later`;
    for (const fail of [() => (provider.unreachable = true), () => (provider.tokenStatus = 502)]) {
      const started = await start();
      const back = await provider.signInAs('bob', started.authorize.href);
      fail();
      try {
        const res = await fetch(back, { redirect: 'manual', headers: { cookie: started.cookie } });
        expect(res.status).toBe(503);
        expect(sessionOf(res)).toBeUndefined();
        expect(await res.json()).toMatchObject({ code: 'unavailable', message: unavailable });
      } finally {
        provider.unreachable = false;
        provider.tokenStatus = null;
      }
    }
    // A browser is sent back to the sign-in page, which says so.
    const started = await start();
    const back = await provider.signInAs('bob', started.authorize.href);
    provider.unreachable = true;
    try {
      const res = await fetch(back, {
        redirect: 'manual',
        headers: { cookie: started.cookie, accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
      });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/login?sso=refused');
      const refusal = res.headers
        .getSetCookie()
        .find((c) => c.startsWith('drover_sso_refusal='))!
        .split(';')[0]!;
      const read = await fetch(`${t.url}/v1/auth/oidc/refusal`, { headers: { cookie: refusal } });
      expect(await read.json()).toEqual({ message: unavailable });
    } finally {
      provider.unreachable = false;
    }
  });

  it('makes an address that started over 30 sign-ins without finishing them wait (each start stores a state)', async () => {
    const from = (address: string) => {
      const dispatcher = new Agent({ localAddress: address });
      return () =>
        undiciFetch(`${t.url}/v1/auth/oidc/start`, { redirect: 'manual', dispatcher, headers: { cookie: '' } });
    };
    const startFrom = from('127.0.0.77');
    for (let i = 0; i < 31; i++) expect((await startFrom()).status).toBe(302);
    const limited = await startFrom();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('60');
    expect(((await limited.json()) as { message: string }).message).toBe(
      'Too many single sign-ons started from this address and not finished; try again in 60 seconds',
    );
    // Starts that arrive together are all counted: 31 are let through, not all of them.
    const together = from('127.0.0.78');
    const statuses = (await Promise.all(Array.from({ length: 40 }, () => together()))).map((r) => r.status);
    expect(statuses.filter((s) => s === 302)).toHaveLength(31);
    expect(statuses.filter((s) => s === 429)).toHaveLength(9);
    // Another address is not held up.
    expect((await signIn('ada')).res.status).toBe(303);
  });

  it('keeps at most 10,000 sign-ins in progress from all addresses together: past that, 503 until some expire', async () => {
    const now = Date.now();
    await t.sql.run(
      `INSERT INTO oidc_states (state_hash, browser_hash, nonce, code_verifier, next_path, created_at, expires_at)
       WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
       SELECT 'filler-' || i, 'b', 'n', 'v', '/orgs', ?, ? FROM n`,
      new Date(now).toISOString(),
      new Date(now + 600_000).toISOString(),
    );
    try {
      const full = await fetch(`${t.url}/v1/auth/oidc/start`, { redirect: 'manual' });
      expect(full.status).toBe(503);
      expect(full.headers.get('retry-after')).toBe('60');
      expect(((await full.json()) as { message: string }).message).toBe(
        'Too many single sign-ons are in progress; try again in a minute',
      );
    } finally {
      await t.sql.run("DELETE FROM oidc_states WHERE state_hash LIKE 'filler-%'");
    }
    expect((await signIn('ada')).res.status).toBe(303);
  });
});

describe('single sign-on, a role map naming one organization by its id and by its name', () => {
  it('takes the highest role of the two entries', async () => {
    // The map as an operator writes it once they know the id: the organization exists first.
    const dataDir = makeTempDir();
    const first = await startTestCoordinator({ dataDir });
    const orgId = first.orgId;
    await first.close();
    const second = await startTestCoordinator({
      dataDir,
      env: {
        ...provider.env,
        DROVER_OIDC_ALLOWED_DOMAINS: 'example.test',
        // kim's groups, in this order: `acme-admins` (by id, owner), then `readers` (by name, viewer).
        DROVER_OIDC_ROLE_MAP: JSON.stringify({
          'acme-admins': { org: orgId, role: 'owner' },
          readers: { org: 'acme', role: 'viewer' },
        }),
      },
    });
    try {
      provider.attach(`${second.url}/v1/auth/oidc/callback`);
      const started = await fetch(`${second.url}/v1/auth/oidc/start?next=%2Forgs`, { redirect: 'manual' });
      const cookie = started.headers
        .getSetCookie()
        .find((c) => c.startsWith('drover_oidc='))!
        .split(';')[0]!;

      const back = await provider.signInAs('kim', started.headers.get('location')!);
      expect((await fetch(back, { redirect: 'manual', headers: { cookie } })).status).toBe(303);
      const members = (await second.owner.get(`/orgs/${orgId}/members`)).body as { email: string; role: string }[];
      expect(members.filter((m) => m.email === 'kim@example.test').map((m) => m.role)).toEqual(['owner']);
    } finally {
      provider.attach(`${t.url}/v1/auth/oidc/callback`);
      await second.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('single sign-on behind HTTPS', () => {
  it('names its cookies with the __Host- prefix, and reads no sign-in key a sibling subdomain could plant', async () => {
    const https = await startTestCoordinator({
      env: {
        ...provider.env,
        DROVER_PUBLIC_URL: 'https://drover.example.test',
        DROVER_OIDC_ALLOWED_DOMAINS: 'example.test',
      },
    });
    try {
      provider.attach('https://drover.example.test/v1/auth/oidc/callback');
      const begin = async () => {
        const res = await fetch(`${https.url}/v1/auth/oidc/start`, { redirect: 'manual' });
        expect(res.headers.getSetCookie().some((c) => c.startsWith('drover_oidc='))).toBe(false);
        const set = res.headers.getSetCookie().find((c) => c.startsWith('__Host-drover_oidc='))!;
        expect(set).toMatch(/; Path=\/; .*HttpOnly; Secure; SameSite=Lax$/);
        const back = await provider.signInAs('ada', res.headers.get('location')!);
        return {
          key: set.split(';')[0]!.slice('__Host-drover_oidc='.length),
          back: `${https.url}${back.pathname}${back.search}`,
        };
      };
      // The sign-in's key under the unprefixed name (planted for the parent domain): not read.
      const planted = await begin();
      const refused = await fetch(planted.back, {
        redirect: 'manual',
        headers: { cookie: `drover_oidc=${planted.key}` },
      });
      expect(refused.status).toBe(401);
      const own = await begin();
      const res = await fetch(own.back, { redirect: 'manual', headers: { cookie: `__Host-drover_oidc=${own.key}` } });
      expect(res.status).toBe(303);
      expect(res.headers.getSetCookie().some((c) => c.startsWith('__Host-drover_session='))).toBe(true);
    } finally {
      provider.attach(`${t.url}/v1/auth/oidc/callback`);
      await https.close();
    }
  });
});
