import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { insertEnrollmentToken } from '../helpers/agent.js';

/** Sign-in and enrollment throttles (docs/management.md, docs/errors.md: 429 with Retry-After). */

function manualClock() {
  return {
    t: Date.now(),
    now() {
      return this.t;
    },
  };
}

const publicKey = () =>
  (generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }) as Buffer)
    .subarray(-32)
    .toString('base64');

describe('sign-in throttling', () => {
  let t: TestCoordinator;
  const clock = manualClock();
  beforeAll(async () => {
    t = await startTestCoordinator({ clock });
  });
  afterAll(() => t?.close());

  const login = (email: string, password: string, from = '127.0.0.1') =>
    t.api.fromAddress(from).post('/auth/login', { body: { email, password }, token: null });

  it('locks an account from an address after five failures, even against the right password, for a doubling time', async () => {
    const from = '127.0.0.11';
    for (let i = 0; i < 6; i++) expect((await login(OWNER_EMAIL, 'wrong password', from)).status).toBe(401);
    const locked = await login(OWNER_EMAIL, OWNER_PASSWORD, from);
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('1');
    expect(locked.body).toMatchObject({ statusCode: 429, code: 'rate_limited' });
    expect(locked.body.message).toMatch(/try again in 1 second/);
    // A stranger failing with the owner's email does not lock the owner out: from an address that
    // has not failed, the right password signs in (any case of the email), and the stranger's
    // address stays locked.
    expect((await login(OWNER_EMAIL.toUpperCase(), OWNER_PASSWORD, '127.0.0.12')).status).toBe(200);
    expect((await login(OWNER_EMAIL, OWNER_PASSWORD, from)).status).toBe(429);

    clock.t += 1_000;
    expect((await login(OWNER_EMAIL, 'wrong again', from)).status).toBe(401);
    const longer = await login(OWNER_EMAIL, OWNER_PASSWORD, from);
    expect(longer.status).toBe(429);
    expect(longer.headers.get('retry-after')).toBe('2');

    clock.t += 2_000;
    expect((await login(OWNER_EMAIL, OWNER_PASSWORD, from)).status).toBe(200);
    // A success clears the count of the account from this address: five more failures are free again.
    for (let i = 0; i < 5; i++) expect((await login(OWNER_EMAIL, 'wrong password', from)).status).toBe(401);
    expect((await login(OWNER_EMAIL, OWNER_PASSWORD, from)).status).toBe(200);
  });

  it('audits the lockouts in the account owner organization', async () => {
    const res = await t.owner.get(`/orgs/${t.orgId}/audit?action=auth.lockout`);
    expect(res.status).toBe(200);
    expect(res.body.length).toBeGreaterThanOrEqual(2);
    expect(res.body.find((e: { targetType: string }) => e.targetType === 'user')).toMatchObject({
      actorType: 'system',
      action: 'auth.lockout',
      targetType: 'user',
      metadata: { scope: 'account', email: OWNER_EMAIL, address: '127.0.0.11' },
    });
  });

  it('locks an address after twenty failures whatever the emails, and not other addresses', async () => {
    const from = '127.0.0.13';
    for (let i = 0; i < 21; i++) {
      expect((await login(`nobody-${i}@example.test`, 'wrong password', from)).status).toBe(401);
    }
    const locked = await login(OWNER_EMAIL, OWNER_PASSWORD, from);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await login(OWNER_EMAIL, OWNER_PASSWORD, '127.0.0.14')).status).toBe(200);
  });
  // A flood beyond the hashes that may wait is refused at once: coordinator/test/domain/auth/passwords.test.ts.
});

describe('enrollment throttling', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator();
  });
  afterAll(() => t?.close());

  const enroll = (enrollmentToken: string, from: string) =>
    t.api.fromAddress(from).post('/agent/enroll', {
      body: { enrollmentToken, publicKey: publicKey(), hostname: 'edge-1', os: 'linux', agentVersion: '1.0.0' },
      token: null,
    });

  it('locks an address after ten failed enrollments, even for a valid token, and audits it', async () => {
    const from = '127.0.0.21';
    for (let i = 0; i < 11; i++) expect((await enroll(`drve_not-a-token-${i}`, from)).status).toBe(401);
    const valid = await insertEnrollmentToken(t);
    const locked = await enroll(valid, from);
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('1');
    // The token was not spent: it still enrolls from another address.
    expect((await enroll(valid, '127.0.0.22')).status).toBe(201);
    // An address lockout belongs to no organization, so no organization's audit log in the API shows it.
    const entries = await t.sql.all<{ address: string; metadata: string }>(
      "SELECT target_id AS address, metadata FROM audit_log WHERE action = 'enrollment.lockout'",
    );
    expect(entries).toEqual([{ address: from, metadata: expect.stringContaining('"failures":11') }]);
  });
});
