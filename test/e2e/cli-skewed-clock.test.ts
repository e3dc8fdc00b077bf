import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKETIME_LIBRARY, skewedClockEnv } from '../helpers/agent-cli.js';
import { buildDrover, drover, signInDrover, type DroverOptions, type SignedInDrover } from '../helpers/cli-binary.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';

/**
 * `drover` on a machine whose clock is off: what it counts from "now" is counted on the
 * coordinator's clock. The coordinator's clock here runs hours behind this machine's (as a laptop
 * hours ahead would see it).
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

// 11 hours: a session lasts 12, so the one signed in is good on both clocks.
describe('drover with a clock 11 hours ahead of the coordinator', () => {
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

// The built executable under libfaketime: the Date header of the coordinator's answers is its real
// clock (an injected clock moves only what the coordinator decides).
describe.skipIf(!FAKETIME_LIBRARY)('drover on a machine 13 hours ahead of the coordinator', () => {
  let signedIn: SignedInDrover;
  const skewed = (args: string[], options: DroverOptions = {}) =>
    drover(args, { ...options, env: { ...options.env, ...skewedClockEnv('+13h') } });

  beforeAll(async () => {
    await buildDrover();
    signedIn = await signInDrover(t.url, 'drover-cli-skewed-clock-13h-', skewed);
  }, 300_000);

  afterAll(() => signedIn?.remove());

  it("takes the session it just opened as the coordinator does, though its end is past on this machine's clock", async () => {
    const listed = await signedIn.run(['trigger', 'list']);
    expect(listed, listed.stderr).toMatchObject({ code: 0, stderr: '' });
    // The session keeps how far the coordinator's clock was from this machine's.
    const session = JSON.parse(
      fs.readFileSync(path.join(signedIn.env.XDG_CONFIG_HOME!, 'drover/session.json'), 'utf8'),
    ) as { expiresAt: string; clockOffsetMs: number };
    expect(Math.abs(session.clockOffsetMs + 13 * HOUR)).toBeLessThan(2_000);
  });
});
