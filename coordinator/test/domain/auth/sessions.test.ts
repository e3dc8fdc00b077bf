import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/db/database.js';
import { migrate } from '../../../src/db/migrate.js';
import { SessionService, SIGNED_OUT_KEPT_PAST_EXPIRY_MS } from '../../../src/domain/auth/sessions.js';
import { createSqliteRepositories } from '../../../src/sqlite-repositories.js';

function setup() {
  const db = openDatabase(':memory:');
  migrate(db);
  let now = Date.parse('2026-06-01T00:00:00Z');
  const clock = { now: () => now };
  const { serverSecrets, signedOutSessions, users } = createSqliteRepositories(db);
  const secrets = { serverSecrets, signedOutSessions, users };
  for (const id of ['user-1', 'user-2']) {
    db.prepare('INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)').run(
      id,
      `${id}@example.test`,
      'x',
      '2026-06-01T00:00:00.000Z',
    );
  }
  return { db, secrets, clock, advance: (ms: number) => (now += ms) };
}

describe('SessionService', () => {
  it('verifies its own tokens and returns the user id and the end of the session', async () => {
    const { secrets, clock } = setup();
    const sessions = await SessionService.create(secrets, 3600, clock);
    const { token, expiresAt } = await sessions.issue('user-1', 0);
    expect(await sessions.verify(token)).toEqual({
      sessionId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      userId: 'user-1',
      expiresAt: '2026-06-01T01:00:00.000Z',
      user: { id: 'user-1', email: 'user-1@example.test', createdAt: '2026-06-01T00:00:00.000Z', sessionGeneration: 0 },
    });
    expect(expiresAt).toBe('2026-06-01T01:00:00.000Z');
  });

  it('refuses an expired token', async () => {
    const { secrets, clock, advance } = setup();
    const sessions = await SessionService.create(secrets, 60, clock);
    const { token } = await sessions.issue('user-1', 0);
    advance(61_000);
    expect(await sessions.verify(token)).toBeNull();
  });

  it('shares its key through the database, so a second instance accepts the same sessions', async () => {
    const { secrets, clock } = setup();
    const a = await SessionService.create(secrets, 3600, clock);
    const b = await SessionService.create(secrets, 3600, clock);
    const { token } = await a.issue('user-1', 0);
    expect(await b.verify(token)).toEqual(await a.verify(token));
    expect(await b.verify(token)).not.toBeNull();
  });

  it('refuses a token signed with another key or tampered with', async () => {
    const one = setup();
    const two = setup();
    const a = await SessionService.create(one.secrets, 3600, one.clock);
    const b = await SessionService.create(two.secrets, 3600, two.clock);
    const { token } = await a.issue('user-1', 0);
    expect(await b.verify(token)).toBeNull();
    const [h, , s] = token.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ sub: 'admin' })).toString('base64url')}.${s}`;
    expect(await a.verify(forged)).toBeNull();
    expect(await a.verify('not-a-jwt')).toBeNull();
  });

  it('refuses a signed-out session everywhere, keeps the other sessions, and forgets it a week after it expired', async () => {
    const { db, secrets, clock, advance } = setup();
    const a = await SessionService.create(secrets, 60, clock);
    const b = await SessionService.create(secrets, 60, clock);
    const gone = await a.issue('user-1', 0);
    const kept = await a.issue('user-1', 0);
    await a.signOut(gone.token);
    expect(await a.verify(gone.token)).toBeNull();
    expect(await b.verify(gone.token)).toBeNull();
    expect(await b.verify(kept.token)).not.toBeNull();
    await a.signOut('not-a-jwt'); // nothing to end
    const count = () => (db.prepare('SELECT COUNT(*) AS n FROM signed_out_sessions').get() as { n: number }).n;
    expect(count()).toBe(1);
    // Kept past its expiry: a clock ahead of the others (or fast for a while) must not bring it back.
    advance(61_000);
    const soon = await a.issue('user-1', 0);
    await a.signOut(soon.token);
    expect(count()).toBe(2);
    advance(SIGNED_OUT_KEPT_PAST_EXPIRY_MS);
    const later = await a.issue('user-1', 0);
    await a.signOut(later.token); // each sign-out forgets those expired a week before
    expect(count()).toBe(2);
  });

  it('refuses a token without a session id (made before sessions had one)', async () => {
    const { secrets, clock } = setup();
    const sessions = await SessionService.create(secrets, 3600, clock);
    const key = Buffer.from(await secrets.serverSecrets.getOrCreate('session_signing_key', () => '', ''), 'base64');
    const { SignJWT } = await import('jose');
    const old = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject('user-1')
      .setIssuer('drover-coordinator')
      .setAudience('drover-dashboard')
      .setIssuedAt(Math.floor(clock.now() / 1000))
      .setExpirationTime(Math.floor(clock.now() / 1000) + 60)
      .sign(key);
    expect(await sessions.verify(old)).toBeNull();
  });

  it("ends every session of a user on every instance at once, and no other user's", async () => {
    const { db, secrets, clock } = setup();
    const a = await SessionService.create(secrets, 3600, clock);
    const b = await SessionService.create(secrets, 3600, clock);
    const mine = [await a.issue('user-1', 0), await b.issue('user-1', 0)];
    const theirs = await a.issue('user-2', 0);
    expect(await a.endAll('user-1')).toBe(1);
    for (const { token } of mine) {
      expect(await a.verify(token)).toBeNull();
      expect(await b.verify(token)).toBeNull();
    }
    expect(await b.verify(theirs.token)).not.toBeNull();
    // A session issued under the new generation is valid; a stale generation stays refused.
    expect(await b.verify((await a.issue('user-1', 1)).token)).not.toBeNull();
    expect(await b.verify((await a.issue('user-1', 0)).token)).toBeNull();
    expect(await a.endAll('nobody')).toBeNull();
    // A user who no longer exists has no session.
    db.prepare("DELETE FROM users WHERE id = 'user-2'").run();
    expect(await a.verify(theirs.token)).toBeNull();
  });

  it('takes a token without a generation (issued before they existed) as the first one', async () => {
    const { secrets, clock } = setup();
    const sessions = await SessionService.create(secrets, 3600, clock);
    const key = Buffer.from(await secrets.serverSecrets.getOrCreate('session_signing_key', () => '', ''), 'base64');
    const { SignJWT } = await import('jose');
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setJti('3f0c1d52-0000-4000-8000-000000000000')
        .setSubject('user-1')
        .setIssuer('drover-coordinator')
        .setAudience('drover-dashboard')
        .setExpirationTime(Math.floor(clock.now() / 1000) + 60)
        .sign(key);
    const old = await sign({});
    expect(await sessions.verify(old)).toMatchObject({ userId: 'user-1' });
    expect(await sessions.verify(await sign({ gen: '0' }))).toBeNull();
    await sessions.endAll('user-1');
    expect(await sessions.verify(old)).toBeNull();
  });
});
