import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { insertEnrollmentToken } from '../helpers/agent.js';

/**
 * Behind a load balancer (docs/scaling.md, "Load balancer"): the client's address comes from
 * X-Forwarded-For only when the connection comes from an address DROVER_TRUST_PROXY names. The
 * limit on device sign-ins pending per address (10) shows which address the coordinator
 * saw: it costs no password hash, where the sign-in lockout per address (20 failures, each one
 * hashed) cost seconds a test. One test shows the lockout takes the same address.
 */

const ADDRESS_FAILURES = 21;
const DEVICE_SIGN_INS = 10;

/** Starts a device sign-in through `from` (a balancer, or the client itself) for `forwardedFor`. */
const startDeviceSignIn = (t: TestCoordinator, from: string, forwardedFor: string | null) =>
  t.api.fromAddress(from).post('/auth/device', {
    body: {},
    token: null,
    headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
  });

/** Uses up the device sign-ins of the address the coordinator sees for (`from`, `forwardedFor`). */
async function useUpDeviceSignIns(t: TestCoordinator, from: string, forwardedFor: (i: number) => string | null) {
  for (let i = 0; i < DEVICE_SIGN_INS; i++) {
    expect((await startDeviceSignIn(t, from, forwardedFor(i))).status).toBe(201);
  }
}

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

  it('counts the forwarded client in its limits, not the balancer', async () => {
    await useUpDeviceSignIns(t, '127.0.0.31', () => '203.0.113.5');
    expect((await startDeviceSignIn(t, '127.0.0.31', '203.0.113.5')).status).toBe(429);
    // Another client behind the same balancer, and the balancer's own requests, are not limited.
    expect((await startDeviceSignIn(t, '127.0.0.31', '203.0.113.6')).status).toBe(201);
    expect((await startDeviceSignIn(t, '127.0.0.31', null)).status).toBe(201);
  });

  it('takes the rightmost address the trusted hops did not add: a client cannot name another', async () => {
    // The client sent "203.0.113.9" itself; the balancer appended the address it saw.
    await useUpDeviceSignIns(t, '127.0.0.31', () => '203.0.113.9, 198.51.100.7');
    expect((await startDeviceSignIn(t, '127.0.0.31', '198.51.100.7')).status).toBe(429);
    expect((await startDeviceSignIn(t, '127.0.0.31', '203.0.113.9')).status).toBe(201);
  });

  it('counts an IPv6 client by its /64 in every limit on unauthenticated calls', async () => {
    // One host is commonly given a whole /64: a fresh address for each guess must not reset the count.
    const from = (i: number) => `2001:db8:5:6::${(i + 1).toString(16)}`;
    for (let i = 0; i < ADDRESS_FAILURES; i++) {
      expect((await login('127.0.0.31', from(i), `six-${i}@example.test`, 'wrong')).status).toBe(401);
    }
    expect((await login('127.0.0.31', '2001:db8:5:6:ffff::9', OWNER_EMAIL, OWNER_PASSWORD)).status).toBe(429);
    expect((await login('127.0.0.31', '2001:db8:5:7::1', OWNER_EMAIL, OWNER_PASSWORD)).status).toBe(200);

    const publicKey = () =>
      (generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }) as Buffer)
        .subarray(-32)
        .toString('base64');
    const enroll = (enrollmentToken: string, forwardedFor: string) =>
      t.api.fromAddress('127.0.0.31').post('/agent/enroll', {
        body: { enrollmentToken, publicKey: publicKey(), hostname: 'edge-1', os: 'linux', agentVersion: '1.0.0' },
        token: null,
        headers: { 'x-forwarded-for': forwardedFor },
      });
    for (let i = 0; i < 11; i++) expect((await enroll(`drve_not-a-token-${i}`, from(100 + i))).status).toBe(401);
    const valid = await insertEnrollmentToken(t);
    expect((await enroll(valid, '2001:db8:5:6::abcd')).status).toBe(429);
    expect((await enroll(valid, '2001:db8:5:8::1')).status).toBe(201);

    await useUpDeviceSignIns(t, '127.0.0.31', (i) => from(200 + i));
    expect((await startDeviceSignIn(t, '127.0.0.31', '2001:db8:5:6::beef')).status).toBe(429);
    expect((await startDeviceSignIn(t, '127.0.0.31', '2001:db8:5:9::1')).status).toBe(201);
    // The approving user still sees the address the sign-in came from, not its /64.
    const shown = await t.sql.all<{ requested_from: string }>(
      "SELECT requested_from FROM device_sign_ins WHERE client_key = '2001:db8:5:6::/64' ORDER BY created_at LIMIT 1",
    );
    expect(shown[0]?.requested_from).toMatch(/^2001:db8:5:6::[0-9a-f]+$/);
  });

  it('ignores X-Forwarded-For from a peer it does not trust', async () => {
    await useUpDeviceSignIns(t, '127.0.0.32', (i) => `198.51.100.${i + 20}`);
    // Every start counted against the peer, whatever the header said.
    expect((await startDeviceSignIn(t, '127.0.0.32', '198.51.100.99')).status).toBe(429);
    expect((await startDeviceSignIn(t, '127.0.0.33', null)).status).toBe(201);
  });
});

describe('without DROVER_TRUST_PROXY', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator();
  });
  afterAll(() => t?.close());

  it('never reads X-Forwarded-For: the connection is the client', async () => {
    await useUpDeviceSignIns(t, '127.0.0.41', (i) => `192.0.2.${i + 1}`);
    expect((await startDeviceSignIn(t, '127.0.0.41', '192.0.2.200')).status).toBe(429);
  });

  it('refuses a malformed DROVER_TRUST_PROXY at start, naming the bad entries', async () => {
    await expect(
      startTestCoordinator({ env: { DROVER_TRUST_PROXY: '10.0.0.0/33, balancer.internal, ::1' } }),
    ).rejects.toThrow(
      /DROVER_TRUST_PROXY: expected IP addresses, CIDR ranges .* got `10\.0\.0\.0\/33`, `balancer\.internal`/,
    );
  });
});
