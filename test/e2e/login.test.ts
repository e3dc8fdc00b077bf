import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';

describe('dashboard sign-in', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator();
  });
  afterAll(() => t?.close());

  it('returns a session token and the user for the right password', async () => {
    const res = await t.api.post('/auth/login', { body: { email: OWNER_EMAIL, password: OWNER_PASSWORD } });
    expect(res.status).toBe(200);
    expect(res.body.user.email).toBe(OWNER_EMAIL);
    expect(res.body.token.split('.')).toHaveLength(3);
    expect(res.body.user).not.toHaveProperty('passwordHash');
  });

  it('refuses a wrong password and an unknown email alike with 401', async () => {
    for (const body of [
      { email: OWNER_EMAIL, password: 'wrong password' },
      { email: 'nobody@example.test', password: OWNER_PASSWORD },
    ]) {
      const res = await t.api.post('/auth/login', { body });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ statusCode: 401, code: 'unauthorized' });
    }
  });

  it('accepts the email in any case', async () => {
    const res = await t.api.post('/auth/login', {
      body: { email: OWNER_EMAIL.toUpperCase(), password: OWNER_PASSWORD },
    });
    expect(res.status).toBe(200);
  });

  it('refuses a forged, expired or garbage session token on dashboard calls', async () => {
    for (const token of ['garbage', `${t.owner.token!.slice(0, -4)}AAAA`]) {
      const res = await t.api.get('/orgs', { token });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('unauthorized');
    }
    expect((await t.api.get('/orgs', { token: null })).status).toBe(401);
  });
});
