import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInDrover, type SignedInDrover } from '../helpers/cli-binary.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';

/**
 * `drover` on a machine whose clock is off: what it counts from "now" is counted on the
 * coordinator's clock. The coordinator's clock here runs 11 hours behind this machine's (as a
 * laptop 11 hours ahead would see it); a session lasts 12 hours, so the one signed in is still
 * good on both clocks.
 */

const HOUR = 3_600_000;
const SKEW_MS = 11 * HOUR;
const clock = { now: () => Date.now() - SKEW_MS };

let t: TestCoordinator;
let owner: SignedInDrover;

beforeAll(async () => {
  t = await startTestCoordinator({ clock });
  owner = await signInDrover(t.url, 'drover-cli-skewed-clock-');
}, 60_000);

afterAll(async () => {
  await t?.close();
  owner?.remove();
});

describe('drover with a clock ahead of the coordinator', () => {
  it('api-token create --expires-in 1h: the token lives an hour on the coordinator, not an hour of this clock', async () => {
    const before = clock.now();
    const issued = await owner.run(['api-token', 'create', '--name', 'ci-hour', '--expires-in', '1h', '--json']);
    const after = clock.now();
    expect(issued, issued.stderr).toMatchObject({ code: 0, stderr: '' });
    const expiresAt = Date.parse(JSON.parse(issued.stdout).expiresAt as string);
    expect(expiresAt).toBeGreaterThanOrEqual(before + HOUR);
    expect(expiresAt).toBeLessThanOrEqual(after + HOUR);
  });
});
