import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';

/**
 * Signed-out sessions and the coordinator's clock (docs/decisions.md, "Sign-out ends the session
 * on the server"): a clock that is fast for a while (booted wrong, then corrected by NTP; or another
 * coordinator on the database with a clock ahead) prunes the sessions signed out, and must not
 * bring a signed-out session back once the clock is right again.
 */

const HOUR = 3_600_000;
const clock = { offsetMs: 0, now: () => Date.now() + clock.offsetMs };
let t: TestCoordinator;

beforeAll(async () => {
  t = await startTestCoordinator({ clock });
});

afterAll(async () => {
  await t?.close();
});

describe('a session signed out', () => {
  it('stays refused after a sign-out on a clock 13 hours fast pruned the list', async () => {
    const signedOut = await t.api.login(OWNER_EMAIL, OWNER_PASSWORD);
    expect((await signedOut.post('/auth/logout')).status).toBe(204);
    expect((await signedOut.get('/auth/session')).status, 'signed out').toBe(401);

    // Fast by 13 hours: past the 12-hour session's expiry, someone signs out (which prunes).
    clock.offsetMs = 13 * HOUR;
    const other = await t.api.login(OWNER_EMAIL, OWNER_PASSWORD);
    expect((await other.post('/auth/logout')).status).toBe(204);

    // Corrected: the first session's token is within its lifetime again, and still signed out.
    clock.offsetMs = 0;
    expect((await signedOut.get('/auth/session')).status, 'signed out, the clock right again').toBe(401);
  });
});
