import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';

/**
 * Behind a load balancer (docs/scaling.md, "Load balancer"): the client's address comes from
 * X-Forwarded-For only when the connection comes from an address DROVER_TRUST_PROXY names. The
 * sign-in lockout per address (20 failures) shows which address the coordinator saw.
 */

const ADDRESS_FAILURES = 21;

describe('X-Forwarded-For from a trusted load balancer', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator({ env: { DROVER_TRUST_PROXY: '127.0.0.31, 10.0.0.0/8' } });
  });
  afterAll(() => t?.close());

  const login = (from: string, forwardedFor: string | null, email: string, password: string) =>
    t.api.fromAddress(from).post('/auth/login', {
      body: { email, password },
      token: null,
      headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
    });

  it('counts failures against the forwarded client, not against the balancer', async () => {
    for (let i = 0; i < ADDRESS_FAILURES; i++) {
      expect((await login('127.0.0.31', '203.0.113.5', `nobody-${i}@example.test`, 'wrong')).status).toBe(401);
    }
    expect((await login('127.0.0.31', '203.0.113.5', OWNER_EMAIL, OWNER_PASSWORD)).status).toBe(429);
    // Another client behind the same balancer, and the balancer's own requests, are not locked.
    expect((await login('127.0.0.31', '203.0.113.6', OWNER_EMAIL, OWNER_PASSWORD)).status).toBe(200);
    expect((await login('127.0.0.31', null, OWNER_EMAIL, OWNER_PASSWORD)).status).toBe(200);
  });

  it('takes the rightmost address the trusted hops did not add: a client cannot name another', async () => {
    // The client sent "203.0.113.9" itself; the balancer appended the address it saw.
    for (let i = 0; i < ADDRESS_FAILURES; i++) {
      const res = await login('127.0.0.31', `203.0.113.9, 198.51.100.7`, `someone-${i}@example.test`, 'wrong');
      expect(res.status).toBe(401);
    }
    expect((await login('127.0.0.31', '198.51.100.7', OWNER_EMAIL, OWNER_PASSWORD)).status).toBe(429);
    expect((await login('127.0.0.31', '203.0.113.9', OWNER_EMAIL, OWNER_PASSWORD)).status).toBe(200);
  });

  it('ignores X-Forwarded-For from a peer it does not trust', async () => {
    for (let i = 0; i < ADDRESS_FAILURES; i++) {
      const res = await login('127.0.0.32', `198.51.100.${i + 20}`, `other-${i}@example.test`, 'wrong');
      expect(res.status).toBe(401);
    }
    // Every attempt counted against the peer, whatever the header said.
    expect((await login('127.0.0.32', '198.51.100.99', OWNER_EMAIL, OWNER_PASSWORD)).status).toBe(429);
    expect((await login('127.0.0.33', null, OWNER_EMAIL, OWNER_PASSWORD)).status).toBe(200);
  });
});

describe('without DROVER_TRUST_PROXY', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator();
  });
  afterAll(() => t?.close());

  it('never reads X-Forwarded-For: the connection is the client', async () => {
    const api = t.api.fromAddress('127.0.0.41');
    for (let i = 0; i < ADDRESS_FAILURES; i++) {
      const res = await api.post('/auth/login', {
        body: { email: `nobody-${i}@example.test`, password: 'wrong' },
        token: null,
        headers: { 'x-forwarded-for': `192.0.2.${i + 1}` },
      });
      expect(res.status).toBe(401);
    }
    const locked = await api.post('/auth/login', {
      body: { email: OWNER_EMAIL, password: OWNER_PASSWORD },
      token: null,
      headers: { 'x-forwarded-for': '192.0.2.200' },
    });
    expect(locked.status).toBe(429);
  });

  it('refuses a malformed DROVER_TRUST_PROXY at start, naming the bad entries', async () => {
    await expect(
      startTestCoordinator({ env: { DROVER_TRUST_PROXY: '10.0.0.0/33, balancer.internal, ::1' } }),
    ).rejects.toThrow(
      /DROVER_TRUST_PROXY: expected IP addresses, CIDR ranges .* got `10\.0\.0\.0\/33`, `balancer\.internal`/,
    );
  });
});
