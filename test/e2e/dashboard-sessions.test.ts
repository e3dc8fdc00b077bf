import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { fakeClock } from '../helpers/members.js';
import { SECURE_SESSION_COOKIE, SESSION_COOKIE, sessionCookieSet, signInForCookie } from '../helpers/session-cookie.js';

/**
 * Browser sessions: sign-in sets an HttpOnly, SameSite=Strict cookie carrying the session JWT;
 * a change made with the cookie needs a same-origin Origin (or Sec-Fetch-Site) and X-Drover-CSRF;
 * bearer tokens keep working as before; sign-out clears the cookie.
 */

const TTL_SECONDS = 3600;

describe('dashboard sessions by cookie', () => {
  const clock = fakeClock();
  let t: TestCoordinator;
  let cookie: string;
  let tokens: string; // POST /v1/orgs/:orgId/enrollment-tokens
  beforeAll(async () => {
    t = await startTestCoordinator({ clock, env: { DROVER_SESSION_TTL_SECONDS: String(TTL_SECONDS) } });
    cookie = await signInForCookie(t.url, OWNER_EMAIL, OWNER_PASSWORD);
    tokens = `${t.url}/v1/orgs/${t.orgId}/enrollment-tokens`;
  });
  afterAll(() => t?.close());

  const withCookie = (headers: Record<string, string> = {}, value = cookie) => ({
    ...headers,
    cookie: `${SESSION_COOKIE}=${value}`,
  });
  const sameOrigin = () => ({ origin: t.url, 'x-drover-csrf': '1', 'content-type': 'application/json' });

  it('sets the session JWT as an HttpOnly, SameSite=Strict cookie at sign-in, not Secure over plain HTTP', async () => {
    const res = await fetch(`${t.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: OWNER_EMAIL, password: OWNER_PASSWORD }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { token: string; expiresAt: string };
    const set = sessionCookieSet(res.headers);
    expect(set).toBeDefined();
    expect(set!.value).toBe(body.token); // the bearer JWT keeps being returned too
    expect(set!.attributes).toMatchObject({ path: '/', httponly: true, samesite: 'Strict' });
    expect(set!.attributes.secure).toBeUndefined();
    expect(new Date(set!.attributes.expires as string).getTime()).toBe(new Date(body.expiresAt).getTime());
  });

  it('reads with the cookie alone: the session, the management API and the job address', async () => {
    const session = await fetch(`${t.url}/v1/auth/session`, { headers: withCookie() });
    expect(session.status).toBe(200);
    expect(await session.json()).toMatchObject({ user: { email: OWNER_EMAIL }, expiresAt: expect.any(String) });
    const orgs = await fetch(`${t.url}/v1/orgs`, { headers: withCookie() });
    expect(orgs.status).toBe(200);
    expect(await orgs.json()).toEqual([expect.objectContaining({ id: t.orgId, role: 'owner' })]);
  });

  it('makes a change with the cookie from the same origin with X-Drover-CSRF', async () => {
    const byOrigin = await fetch(tokens, { method: 'POST', headers: withCookie(sameOrigin()), body: '{}' });
    expect(byOrigin.status).toBe(201);
    const { origin: _origin, ...rest } = sameOrigin();
    const byFetchSite = await fetch(tokens, {
      method: 'POST',
      headers: withCookie({ ...rest, 'sec-fetch-site': 'same-origin' }),
      body: '{}',
    });
    expect(byFetchSite.status).toBe(201);
  });

  it('refuses a change with the cookie from another origin, or without Origin, 403 with a clear message', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ origin: 'https://evil.example', 'x-drover-csrf': '1' }, /must come from the dashboard's own origin/],
      [{ origin: 'null', 'x-drover-csrf': '1' }, /must come from the dashboard's own origin/],
      [{ 'x-drover-csrf': '1' }, /needs a same-origin Origin header/],
      [{ 'x-drover-csrf': '1', 'sec-fetch-site': 'cross-site' }, /needs a same-origin Origin header/],
      [{ 'x-drover-csrf': '1', 'sec-fetch-site': 'same-site' }, /needs a same-origin Origin header/],
      [{ origin: 'https://evil.example', 'sec-fetch-site': 'same-origin', 'x-drover-csrf': '1' }, /own origin/],
    ];
    for (const [headers, message] of cases) {
      const res = await fetch(tokens, {
        method: 'POST',
        headers: withCookie({ ...headers, 'content-type': 'application/json' }),
        body: '{}',
      });
      expect(res.status, JSON.stringify(headers)).toBe(403);
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code).toBe('forbidden');
      expect(body.message).toMatch(/^Cross-site request refused: /);
      expect(body.message).toMatch(message);
    }
  });

  it('refuses a same-origin change with the cookie but without X-Drover-CSRF (what a cross-site form sends)', async () => {
    for (const value of [undefined, '0', 'yes']) {
      const headers: Record<string, string> = { origin: t.url, 'content-type': 'text/plain' };
      if (value !== undefined) headers['x-drover-csrf'] = value;
      const res = await fetch(tokens, { method: 'POST', headers: withCookie(headers), body: '{}' });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { message: string }).message).toBe(
        'Cross-site request refused: a change made with the session cookie needs the header X-Drover-CSRF: 1',
      );
    }
  });

  it('refuses a cross-site change before reading its body, and changes nothing', async () => {
    const before = await t.owner.get('/orgs');
    for (const method of ['POST', 'PATCH', 'DELETE', 'PUT']) {
      const res = await fetch(`${t.url}/v1/orgs`, {
        method,
        headers: withCookie({ origin: 'https://evil.example', 'content-type': 'application/json' }),
        body: '{"name": 42, "unknown": true}',
      });
      expect([403, 405], method).toContain(res.status);
    }
    const created = await fetch(`${t.url}/v1/orgs`, {
      method: 'POST',
      headers: withCookie({ origin: 'https://evil.example', 'content-type': 'application/json' }),
      body: '{"name":"evil"}',
    });
    expect(created.status).toBe(403);
    expect((await t.owner.get('/orgs')).body).toEqual(before.body);
  });

  it('leaves bearer tokens alone: no Origin or X-Drover-CSRF needed, whatever Origin is sent', async () => {
    const plain = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: {} });
    expect(plain.status).toBe(201);
    const foreign = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, {
      body: {},
      headers: { origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(foreign.status).toBe(201);
    // A bearer token wins over a cookie sent with it (here a cookie that is not a session).
    const both = await t.owner.get('/orgs', { headers: { cookie: `${SESSION_COOKIE}=not-a-jwt` } });
    expect(both.status).toBe(200);
  });

  it('refuses a sign-in from another site, and accepts one from the same origin', async () => {
    const body = JSON.stringify({ email: OWNER_EMAIL, password: OWNER_PASSWORD });
    const crossSite: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of crossSite) {
      const res = await fetch(`${t.url}/v1/auth/login`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(403);
      expect(sessionCookieSet(res.headers)).toBeUndefined();
      expect(((await res.json()) as { message: string }).message).toMatch(/^Cross-site sign-in refused/);
    }
    const same = await fetch(`${t.url}/v1/auth/login`, {
      method: 'POST',
      headers: { origin: t.url, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
      body,
    });
    expect(same.status).toBe(200);
  });

  it('signs out: ends the session and clears the cookie; a cross-site sign-out with the cookie is refused', async () => {
    const mine = await signInForCookie(t.url, OWNER_EMAIL, OWNER_PASSWORD);
    const crossSite = await fetch(`${t.url}/v1/auth/logout`, {
      method: 'POST',
      headers: withCookie({ origin: 'https://evil.example' }, mine),
    });
    expect(crossSite.status).toBe(403);
    expect(sessionCookieSet(crossSite.headers)).toBeUndefined();

    const res = await fetch(`${t.url}/v1/auth/logout`, {
      method: 'POST',
      headers: withCookie({ origin: t.url, 'x-drover-csrf': '1' }, mine),
    });
    expect(res.status).toBe(204);
    const cleared = sessionCookieSet(res.headers);
    expect(cleared).toMatchObject({ value: '', attributes: { path: '/', httponly: true, samesite: 'Strict' } });
    expect(new Date(cleared!.attributes.expires as string).getTime()).toBeLessThan(clock.now());

    // The session itself has ended, not only the cookie: a copy of it is refused.
    const copy = await fetch(`${t.url}/v1/auth/session`, { headers: withCookie({}, mine) });
    expect(copy.status).toBe(401);
    expect((await fetch(`${t.url}/v1/auth/session`, { headers: { authorization: `Bearer ${mine}` } })).status).toBe(
      401,
    );

    const anonymous = await fetch(`${t.url}/v1/auth/logout`, { method: 'POST' });
    expect(anonymous.status).toBe(204);
  });

  it('signs out a bearer session and leaves the other sessions of the user signed in', async () => {
    const other = await signInForCookie(t.url, OWNER_EMAIL, OWNER_PASSWORD);
    const mine = await signInForCookie(t.url, OWNER_EMAIL, OWNER_PASSWORD);
    const bearer = { authorization: `Bearer ${mine}` };
    expect((await fetch(`${t.url}/v1/auth/logout`, { method: 'POST', headers: bearer })).status).toBe(204);
    expect((await fetch(`${t.url}/v1/auth/session`, { headers: bearer })).status).toBe(401);
    expect((await fetch(`${t.url}/v1/auth/session`, { headers: { authorization: `Bearer ${other}` } })).status).toBe(
      200,
    );
  });

  it('answers 401 once the session has expired, with the cookie as with the bearer token', async () => {
    const mine = await signInForCookie(t.url, OWNER_EMAIL, OWNER_PASSWORD);
    expect((await fetch(`${t.url}/v1/auth/session`, { headers: withCookie({}, mine) })).status).toBe(200);
    clock.advance((TTL_SECONDS + 1) * 1000);
    const res = await fetch(`${t.url}/v1/auth/session`, { headers: withCookie({}, mine) });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({
      code: 'unauthorized',
      message: 'The session token is invalid, expired or signed out',
    });
    expect((await fetch(`${t.url}/v1/auth/session`, { headers: { authorization: `Bearer ${mine}` } })).status).toBe(
      401,
    );
  });
});

describe('dashboard sessions behind HTTPS', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator({ env: { DROVER_PUBLIC_URL: 'https://drover.example.test' } });
  });
  afterAll(() => t?.close());

  it('marks the cookie Secure and __Host- when DROVER_PUBLIC_URL is https, and accepts changes from that origin', async () => {
    const res = await fetch(`${t.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: OWNER_EMAIL, password: OWNER_PASSWORD }),
    });
    expect(sessionCookieSet(res.headers)).toBeUndefined();
    const set = sessionCookieSet(res.headers, SECURE_SESSION_COOKIE);
    expect(set?.attributes).toMatchObject({ secure: true, httponly: true, samesite: 'Strict', path: '/' });
    expect(set?.attributes.domain).toBeUndefined();
    const change = (cookie: string) =>
      fetch(`${t.url}/v1/orgs/${t.orgId}/enrollment-tokens`, {
        method: 'POST',
        headers: {
          cookie,
          origin: 'https://drover.example.test',
          'x-drover-csrf': '1',
          'content-type': 'application/json',
        },
        body: '{}',
      });
    expect((await change(`${SECURE_SESSION_COOKIE}=${set!.value}`)).status).toBe(201);
    // The unprefixed name, which a sibling subdomain could plant, is not read over HTTPS.
    expect((await change(`${SESSION_COOKIE}=${set!.value}`)).status).toBe(401);
  });
});

describe('ending sessions: a password change, and sign out everywhere', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator();
  });
  afterAll(() => t?.close());

  const session = (token: string) =>
    fetch(`${t.url}/v1/auth/session`, { headers: { authorization: `Bearer ${token}` } });
  const changePassword = (token: string, body: unknown, from?: string) =>
    (from ? t.api.fromAddress(from) : t.api).post('/auth/password', { body, token });
  const signIn = async (password: string) => (await t.api.login(OWNER_EMAIL, password)).token!;

  it('refuses a wrong current password, a short or unchanged new one, with 422 at the field, changing nothing', async () => {
    const token = await signIn(OWNER_PASSWORD);
    const cases: [unknown, string, RegExp][] = [
      [
        { currentPassword: 'not it at all', newPassword: 'a new long passphrase' },
        'body.currentPassword',
        /is not your current password/,
      ],
      [
        { currentPassword: OWNER_PASSWORD, newPassword: 'short' },
        'body.newPassword',
        /must be 8 to 1024 characters, got 5/,
      ],
      [{ currentPassword: OWNER_PASSWORD, newPassword: OWNER_PASSWORD }, 'body.newPassword', /must differ/],
      [{ currentPassword: OWNER_PASSWORD }, 'body.newPassword', /required/],
      [{ currentPassword: OWNER_PASSWORD, newPassword: 'a new long passphrase', extra: 1 }, 'body.extra', /./],
    ];
    for (const [body, path, message] of cases) {
      const res = await changePassword(token, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.details).toEqual([{ path, message: expect.stringMatching(message) }]);
    }
    expect((await session(token)).status).toBe(200);
    expect((await t.api.post('/auth/password', { body: {}, token: null })).status).toBe(401);
  });

  it('counts wrong current passwords as failed sign-ins: locked from that address after five', async () => {
    const token = await signIn(OWNER_PASSWORD);
    const from = '127.0.0.31';
    const wrong = { currentPassword: 'a wrong guess', newPassword: 'a new long passphrase' };
    for (let i = 0; i < 6; i++) expect((await changePassword(token, wrong, from)).status).toBe(422);
    const locked = await changePassword(token, { ...wrong, currentPassword: OWNER_PASSWORD }, from);
    expect(locked.status).toBe(429);
    expect(locked.body.message).toMatch(/Too many failed sign-in attempts/);
    // The same counts as sign-in: that address cannot sign in with the account either, another can.
    const fromThere = await t.api.fromAddress(from).post('/auth/login', {
      body: { email: OWNER_EMAIL, password: OWNER_PASSWORD },
      token: null,
    });
    expect(fromThere.status).toBe(429);
    expect((await session(token)).status).toBe(200);
  });

  it("changes the password: every other session is refused at once, the caller's is renewed", async () => {
    const other = await signIn(OWNER_PASSWORD);
    const cookie = await signInForCookie(t.url, OWNER_EMAIL, OWNER_PASSWORD);
    const mine = await signIn(OWNER_PASSWORD);
    const res = await changePassword(mine, { currentPassword: OWNER_PASSWORD, newPassword: 'a new long passphrase' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token: expect.any(String), user: { email: OWNER_EMAIL } });
    expect(sessionCookieSet(res.headers)).toBeUndefined(); // a bearer call: no cookie to replace
    for (const ended of [other, cookie, mine]) expect((await session(ended)).status).toBe(401);
    expect((await session(res.body.token)).status).toBe(200);
    const byCookie = await fetch(`${t.url}/v1/auth/session`, { headers: { cookie: `${SESSION_COOKIE}=${cookie}` } });
    expect(byCookie.status).toBe(401);
    expect(await byCookie.json()).toMatchObject({ message: 'The session token is invalid, expired or signed out' });
    await expect(signIn(OWNER_PASSWORD)).rejects.toThrow(/401/);
    const renewed = t.api.withToken(await signIn('a new long passphrase'));
    const audit = await renewed.get(`/orgs/${t.orgId}/audit?action=auth.password_change`);
    expect(audit.body).toEqual([
      expect.objectContaining({ actorType: 'user', targetType: 'user', metadata: { email: OWNER_EMAIL } }),
    ]);
  });

  it('with the cookie, replaces the cookie, and refuses a cross-site change', async () => {
    const cookie = await signInForCookie(t.url, OWNER_EMAIL, 'a new long passphrase');
    const body = JSON.stringify({ currentPassword: 'a new long passphrase', newPassword: 'the third passphrase' });
    const headers = (origin: string) => ({
      cookie: `${SESSION_COOKIE}=${cookie}`,
      origin,
      'x-drover-csrf': '1',
      'content-type': 'application/json',
    });
    const crossSite = await fetch(`${t.url}/v1/auth/password`, {
      method: 'POST',
      headers: headers('https://evil.example'),
      body,
    });
    expect(crossSite.status).toBe(403);
    const res = await fetch(`${t.url}/v1/auth/password`, { method: 'POST', headers: headers(t.url), body });
    expect(res.status).toBe(200);
    const set = sessionCookieSet(res.headers);
    expect(set?.value).toBe(((await res.json()) as { token: string }).token);
    expect(set?.attributes).toMatchObject({ httponly: true, samesite: 'Strict' });
    expect(
      (await fetch(`${t.url}/v1/auth/session`, { headers: { cookie: `${SESSION_COOKIE}=${set!.value}` } })).status,
    ).toBe(200);
  });

  it("signs out everywhere: every session of the user ends, the caller's included", async () => {
    const password = 'the third passphrase';
    const [one, two] = [await signIn(password), await signIn(password)];
    const cookie = await signInForCookie(t.url, OWNER_EMAIL, password);
    const res = await fetch(`${t.url}/v1/auth/logout-everywhere`, {
      method: 'POST',
      headers: { cookie: `${SESSION_COOKIE}=${cookie}`, origin: t.url, 'x-drover-csrf': '1' },
    });
    expect(res.status).toBe(204);
    expect(sessionCookieSet(res.headers)).toMatchObject({ value: '' });
    for (const ended of [one, two, cookie]) expect((await session(ended)).status).toBe(401);
    expect((await t.api.post('/auth/logout-everywhere', { token: one })).status).toBe(401);
    // Signing in again works, with the same password.
    const again = t.api.withToken(await signIn(password));
    expect((await again.get('/auth/session')).status).toBe(200);
    const audit = await again.get(`/orgs/${t.orgId}/audit?action=auth.sign_out_everywhere`);
    expect(audit.body).toHaveLength(1);
  });
});
