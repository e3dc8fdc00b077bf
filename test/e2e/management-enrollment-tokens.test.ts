import { generateEd25519KeyPair } from '@drover/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser, fakeClock } from '../helpers/members.js';

describe('enrollment tokens', () => {
  let t: TestCoordinator;
  const clock = fakeClock(Date.parse('2030-01-01T00:00:00.000Z'));
  beforeAll(async () => {
    t = await startTestCoordinator({ clock });
  });
  afterAll(() => t?.close());

  const enroll = (enrollmentToken: string) =>
    t.api.post('/agent/enroll', {
      body: {
        enrollmentToken,
        publicKey: generateEd25519KeyPair().publicKey,
        hostname: 'edge-1',
        os: 'linux',
        agentVersion: '1.0.0',
      },
    });

  it('issues a drve_ token valid for one hour by default and stores only its hash', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { name: 'rack 4' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'rack 4',
      token: expect.stringMatching(/^drve_[A-Za-z0-9_-]{43}$/),
      expiresAt: '2030-01-01T01:00:00.000Z',
    });
    // What is stored of the token (its hash, not the token) is not in the API.
    const rows = await t.sql.all('SELECT * FROM enrollment_tokens WHERE id = ?', res.body.id);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(res.body.token);
    expect(JSON.stringify(rows)).not.toContain(res.body.token.slice(5));
  });

  it('accepts no body at all, and a lifetime from 60 seconds to 30 days', async () => {
    const none = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`);
    expect(none.status).toBe(201);
    expect(none.body.name).toBeNull();
    const min = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { expiresInSeconds: 60 } });
    expect(min.body.expiresAt).toBe('2030-01-01T00:01:00.000Z');
    const max = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { expiresInSeconds: 30 * 86400 } });
    expect(max.body.expiresAt).toBe('2030-01-31T00:00:00.000Z');
  });

  it('refuses bad input with 422', async () => {
    for (const body of [
      { expiresInSeconds: 59 },
      { expiresInSeconds: 30 * 86400 + 1 },
      { expiresInSeconds: 90.5 },
      { expiresInSeconds: '3600' },
      { expiresInSeconds: null },
      { name: '' },
      { name: '   ' },
      { name: 'n'.repeat(256) },
      { name: ['a'] },
      { token: 'drve_mine' },
      [],
      'text',
    ]) {
      const res = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.code).toBe('validation_failed');
    }
  });

  it('refuses a name with a bidirectional override, which would show it reordered, and keeps the marks', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { name: 'edge\u202egpj.exe' } });
    expect(res.status).toBe(422);
    expect(res.body.details).toEqual([
      {
        path: 'body.name',
        message:
          'must not contain bidirectional formatting characters (U+202A to U+202E, U+2066 to U+2069), which make a name show in another order than it is written, got U+202E',
      },
    ]);
    const marked = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, {
      body: { name: '\u05e9\u05e8\u05ea 4\u200f' },
    });
    expect(marked.status).toBe(201);
  });

  it('lets a plain member issue one', async () => {
    const { client } = await addUser(t.owner, t.orgId, 'member@example.test');
    expect((await client.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: {} })).status).toBe(201);
  });

  it('can be used once only', async () => {
    const { body } = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: {} });
    const first = await enroll(body.token);
    expect(first.status).toBe(201);
    expect(first.body.orgId).toBe(t.orgId);
    const second = await enroll(body.token);
    expect(second.status).toBe(401);
    expect(second.body.code).toBe('unauthorized');
  });

  it('expires after its lifetime', async () => {
    const { body } = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { expiresInSeconds: 120 } });
    const alive = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { expiresInSeconds: 120 } });
    clock.advance(119_000);
    expect((await enroll(alive.body.token)).status).toBe(201);
    clock.advance(1_000);
    expect((await enroll(body.token)).status).toBe(401);
  });

  it('records the issue in the audit log without the token', async () => {
    const { body } = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { name: 'audited' } });
    const audit = await t.owner.get(`/orgs/${t.orgId}/audit?action=enrollment_token.create&limit=1`);
    expect(audit.body[0]).toMatchObject({
      action: 'enrollment_token.create',
      actorType: 'user',
      targetType: 'enrollment_token',
      targetId: body.id,
      metadata: { name: 'audited', expiresAt: body.expiresAt },
    });
    expect(audit.text).not.toContain(body.token);
  });
});
