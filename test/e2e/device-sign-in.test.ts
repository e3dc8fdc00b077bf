import type { Schema } from '@drover/shared/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { addUser, fakeClock } from '../helpers/members.js';
import { SESSION_COOKIE, signInForCookie } from '../helpers/session-cookie.js';

/**
 * Signing the command line in through the browser (RFC 8628's device authorization grant): the
 * command line starts and polls without credentials, a signed-in user approves or denies the
 * code, and the session is handed out once. Time is a fake clock: expiry and the poll interval
 * without waiting.
 */

type Started = Schema<'DeviceSignInStart'>;

describe('device sign-in', () => {
  const clock = fakeClock();
  let t: TestCoordinator;
  let owner: ApiClient;
  beforeAll(async () => {
    t = await startTestCoordinator({ clock });
    owner = t.owner;
  });
  afterAll(() => t?.close());

  const start = async (body?: unknown) => {
    const res = await t.api.post<Started>('/auth/device', body === undefined ? {} : { body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const poll = (deviceCode: string) => t.api.post('/auth/device/token', { body: { deviceCode } });
  const nextInterval = () => clock.advance(5_000);

  it('hands the approving user a session once: pending, approved, then 410', async () => {
    const started = await start({ client: 'drover 1.4.0 on build-7' });
    expect(started.userCode).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(started.deviceCode).toMatch(/^[\w-]{43}$/);
    expect(started.verificationUri).toBe(`${t.url}/device`);
    expect(started.verificationUriComplete).toBe(`${t.url}/device?code=${started.userCode}`);
    expect(Date.parse(started.expiresAt) - clock.now()).toBe(600_000);
    expect(started.interval).toBe(5);

    const pending = await poll(started.deviceCode);
    expect(pending.status).toBe(202);
    expect(pending.body).toEqual({ status: 'pending', expiresAt: started.expiresAt, interval: 5 });

    // Any case, without the hyphen: the page shows who asked.
    const typed = started.userCode.replace('-', '').toLowerCase();
    const shown = await owner.get(`/auth/device/${typed}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toEqual({
      userCode: started.userCode,
      status: 'pending',
      client: 'drover 1.4.0 on build-7',
      requestedFrom: '127.0.0.1',
      requestedAt: new Date(clock.now()).toISOString(),
      expiresAt: started.expiresAt,
    });

    const approved = await owner.post(`/auth/device/${started.userCode}/approve`);
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ userCode: started.userCode, status: 'approved' });
    expect((await owner.post(`/auth/device/${started.userCode}/deny`)).status).toBe(409);

    // Polled too soon after the last poll: 429 with the seconds left.
    const tooSoon = await poll(started.deviceCode);
    expect(tooSoon.status).toBe(429);
    expect(tooSoon.headers.get('retry-after')).toBe('5');

    nextInterval();
    const signedIn = await poll(started.deviceCode);
    expect(signedIn.status).toBe(200);
    expect(signedIn.headers.get('set-cookie')).toBeNull();
    expect(signedIn.body).toMatchObject({ user: { email: OWNER_EMAIL }, expiresAt: expect.any(String) });
    const session = await t.api.get('/auth/session', { token: signedIn.body.token });
    expect(session.status).toBe(200);
    expect(session.body.user.email).toBe(OWNER_EMAIL);

    nextInterval();
    const again = await poll(started.deviceCode);
    expect(again.status).toBe(410);
    expect(again.body.code).toBe('device_sign_in_expired');
    expect((await owner.get(`/auth/device/${started.userCode}`)).status).toBe(404);
  });

  it('answers a denial with 403, and an unknown, expired or malformed code with 404 or 410', async () => {
    const denied = await start();
    const deny = await owner.post(`/auth/device/${denied.userCode}/deny`);
    expect(deny.body).toMatchObject({ status: 'denied', client: null });
    nextInterval();
    const refused = await poll(denied.deviceCode);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('device_sign_in_denied');

    const unknown = await poll('no-such-device-code');
    expect(unknown.status).toBe(404);
    for (const code of ['BCDF-GHJK', 'AEIO-UAEI', 'short', 'BCDF-GHJK-LMNP']) {
      const res = await owner.get(`/auth/device/${code}`);
      expect(res.status, code).toBe(404);
      expect(res.body.message).toMatch(/No sign-in waits for this code/);
      expect((await owner.post(`/auth/device/${code}/approve`)).status, code).toBe(404);
    }

    const late = await start();
    clock.advance(600_000);
    expect((await owner.post(`/auth/device/${late.userCode}/approve`)).status).toBe(404);
    const expired = await poll(late.deviceCode);
    expect(expired.status).toBe(410);
    expect(expired.body.code).toBe('device_sign_in_expired');
  });

  it("ends an approved sign-in when the approver's sessions are all ended before the poll", async () => {
    const member = await t.api.login(OWNER_EMAIL, OWNER_PASSWORD);
    const started = await start();
    expect((await member.post(`/auth/device/${started.userCode}/approve`)).status).toBe(200);
    expect((await member.post('/auth/logout-everywhere')).status).toBe(204);
    const refused = await poll(started.deviceCode);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/sessions were all ended/);
    owner = await t.api.login(OWNER_EMAIL, OWNER_PASSWORD);
  });

  it('needs a session to look up or decide, and the cross-site checks with the cookie', async () => {
    const started = await start();
    expect((await t.api.get(`/auth/device/${started.userCode}`)).status).toBe(401);
    expect((await t.api.post(`/auth/device/${started.userCode}/approve`)).status).toBe(401);
    const cookie = await signInForCookie(t.url, OWNER_EMAIL, OWNER_PASSWORD);
    const crossSite = await fetch(`${t.baseUrl}/auth/device/${started.userCode}/approve`, {
      method: 'POST',
      headers: { cookie: `${SESSION_COOKIE}=${cookie}`, origin: 'https://evil.example', 'x-drover-csrf': '1' },
    });
    expect(crossSite.status).toBe(403);
    const sameSite = await fetch(`${t.baseUrl}/auth/device/${started.userCode}/approve`, {
      method: 'POST',
      headers: { cookie: `${SESSION_COOKIE}=${cookie}`, origin: t.url, 'x-drover-csrf': '1' },
    });
    expect(sameSite.status).toBe(200);
  });

  it('refuses a bad start or poll body with 422, and an eleventh pending sign-in from one address with 429', async () => {
    for (const body of [
      { client: '' },
      { client: '   ' },
      { client: 'x'.repeat(121) },
      { client: 'a\nb' },
      { client: 'drover on \u202eevil' }, // a right-to-left override
      { client: 'drover\u200b' }, // a zero-width space
      { other: 1 },
    ]) {
      expect((await t.api.post('/auth/device', { body })).status, JSON.stringify(body)).toBe(422);
    }
    expect((await t.api.post('/auth/device/token', { body: {} })).status).toBe(422);
    clock.advance(600_001); // what the tests above left pending has expired
    const from = t.api.fromAddress('127.0.0.9');
    for (let i = 0; i < 10; i++) expect((await from.post('/auth/device', { body: {} })).status).toBe(201);
    const eleventh = await from.post('/auth/device', { body: {} });
    expect(eleventh.status).toBe(429);
    expect(eleventh.headers.get('retry-after')).toBe('600');
    expect((await t.api.post('/auth/device', { body: {} })).status).toBe(201); // another address
  });

  it('locks a user out of the code pages past 10 wrong codes, doubling, the right code included', async () => {
    const { client: guesser } = await addUser(owner, t.orgId, 'guesser@example.test');
    const mine = await start();
    // 10 are free; the 11th (answered) locks.
    for (let i = 0; i < 11; i++) {
      expect((await guesser.get(`/auth/device/BBBB-BB${'BCDFGHJKLMN'[i]}B`)).status).toBe(404);
    }
    const locked = await guesser.get('/auth/device/BBBB-BBBC');
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe('rate_limited');
    expect(locked.headers.get('retry-after')).toBe('1');
    // While locked, a right code is not looked at either; another user is not concerned.
    expect((await guesser.get(`/auth/device/${mine.userCode}`)).status).toBe(429);
    expect((await guesser.post(`/auth/device/${mine.userCode}/deny`)).status).toBe(429);
    expect((await owner.get(`/auth/device/${mine.userCode}`)).status).toBe(200);
    clock.advance(1_000);
    // A code found does not clear the count: the next miss, by a denial, locks for twice as long.
    expect((await guesser.get(`/auth/device/${mine.userCode}`)).status).toBe(200);
    expect((await guesser.post('/auth/device/BBBB-BBBD/deny')).status).toBe(404);
    const again = await guesser.get(`/auth/device/${mine.userCode}`);
    expect(again.status).toBe(429);
    expect(again.headers.get('retry-after')).toBe('2');
  });

  it('stores at most 10,000 sign-ins from every address together: beyond, 503 until some expire', async () => {
    clock.advance(600_001);
    // 10,000 from as many addresses (each within its own limit), as a start from each would store them.
    const now = new Date(clock.now()).toISOString();
    const expires = new Date(clock.now() + 600_000).toISOString();
    await t.sql.run(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
       INSERT INTO device_sign_ins (device_code_hash, user_code, requested_from, client_key, created_at, expires_at)
       SELECT 'filler' || i, 'FILLER' || i, '2001:db8::1', '2001:db8:' || i || '::', ?, ? FROM n`,
      now,
      expires,
    );
    const full = await t.api.fromAddress('127.0.0.10').post('/auth/device', { body: {} });
    expect(full.status).toBe(503);
    expect(full.body).toMatchObject({ code: 'unavailable' });
    expect(full.headers.get('retry-after')).toBe('60');
    const stored = await t.sql.get<{ n: number }>('SELECT count(*) AS n FROM device_sign_ins');
    expect(Number(stored!.n)).toBe(10_000);
    clock.advance(600_001);
    expect((await t.api.fromAddress('127.0.0.10').post('/auth/device', { body: {} })).status).toBe(201);
  });
});
