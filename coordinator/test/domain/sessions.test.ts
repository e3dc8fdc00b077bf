import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createServerSecretRepository } from '../../src/db/repositories/server-secrets.js';
import { SessionService } from '../../src/domain/sessions.js';

function setup() {
  const db = openDatabase(':memory:');
  migrate(db);
  let now = Date.parse('2026-06-01T00:00:00Z');
  const clock = { now: () => now };
  return { secrets: createServerSecretRepository(db), clock, advance: (ms: number) => (now += ms) };
}

describe('SessionService', () => {
  it('verifies its own tokens and returns the user id and the end of the session', async () => {
    const { secrets, clock } = setup();
    const sessions = await SessionService.create(secrets, 3600, clock);
    const { token, expiresAt } = await sessions.issue('user-1');
    expect(await sessions.verify(token)).toEqual({ userId: 'user-1', expiresAt: '2026-06-01T01:00:00.000Z' });
    expect(expiresAt).toBe('2026-06-01T01:00:00.000Z');
  });

  it('refuses an expired token', async () => {
    const { secrets, clock, advance } = setup();
    const sessions = await SessionService.create(secrets, 60, clock);
    const { token } = await sessions.issue('user-1');
    advance(61_000);
    expect(await sessions.verify(token)).toBeNull();
  });

  it('shares its key through the database, so a second instance accepts the same sessions', async () => {
    const { secrets, clock } = setup();
    const a = await SessionService.create(secrets, 3600, clock);
    const b = await SessionService.create(secrets, 3600, clock);
    const { token } = await a.issue('user-1');
    expect(await b.verify(token)).toEqual({ userId: 'user-1', expiresAt: '2026-06-01T01:00:00.000Z' });
  });

  it('refuses a token signed with another key or tampered with', async () => {
    const one = setup();
    const two = setup();
    const a = await SessionService.create(one.secrets, 3600, one.clock);
    const b = await SessionService.create(two.secrets, 3600, two.clock);
    const { token } = await a.issue('user-1');
    expect(await b.verify(token)).toBeNull();
    const [h, , s] = token.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ sub: 'admin' })).toString('base64url')}.${s}`;
    expect(await a.verify(forged)).toBeNull();
    expect(await a.verify('not-a-jwt')).toBeNull();
  });
});
