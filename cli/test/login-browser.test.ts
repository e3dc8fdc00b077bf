import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/program.js';
import { fakeCoordinator, type FakeAnswer, type FakeCoordinator } from './fake-coordinator.js';
import { testRuntime } from './test-runtime.js';

/**
 * The polling of `drover login --browser` against answers a real coordinator gives rarely (a 429
 * with `Retry-After`, an interval other than 5 s). test/e2e/cli-login-browser.test.ts has the
 * whole sign-in against a real one.
 */

let api: FakeCoordinator | undefined;
let home: string | undefined;
afterEach(async () => {
  await api?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const SIGNED_IN = {
  token: 'eyJ.x.y',
  expiresAt: '2030-01-01T00:00:00.000Z',
  user: { id: '3f0c1d52-0000-4000-8000-000000000000', email: 'ops@example.com', createdAt: '2026-01-01T00:00:00Z' },
};

describe('drover login --browser', () => {
  it('polls at the interval the coordinator gives, and waits as long as a 429 asks', async () => {
    const polls: number[] = [];
    const answers: FakeAnswer[] = [
      [202, { status: 'pending', expiresAt: '2030-01-01T00:00:00.000Z', interval: 1 }],
      [429, { statusCode: 429, code: 'rate_limited', message: 'Too soon' }, { 'retry-after': '2' }],
      [200, SIGNED_IN],
    ];
    api = await fakeCoordinator({
      'POST /v1/auth/device': [
        201,
        {
          deviceCode: 'd'.repeat(43),
          userCode: 'BCDF-GHJK',
          verificationUri: 'http://drover.test/device',
          verificationUriComplete: 'http://drover.test/device?code=BCDF-GHJK',
          expiresAt: '2030-01-01T00:00:00.000Z',
          interval: 1,
        },
      ],
      'POST /v1/auth/device/token': () => {
        polls.push(Date.now());
        return answers.shift()!;
      },
      'GET /v1/orgs': [200, [{ id: 'o', name: 'acme', role: 'owner' }]],
    });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-cli-login-'));
    const rt = testRuntime({ env: { DROVER_URL: api.url, XDG_CONFIG_HOME: home } });
    const started = Date.now();
    expect(await runCli(['login', '--browser'], rt)).toBe(0);
    expect(rt.stdout()).toBe(
      `Signed in to ${api.url} as ops@example.com until 2030-01-01T00:00:00.000Z\nOrganizations: acme (owner)\n`,
    );
    const gaps = polls.map((at, i) => at - (i === 0 ? started : polls[i - 1]!));
    expect(gaps[0]).toBeGreaterThanOrEqual(1000);
    expect(gaps[1]).toBeGreaterThanOrEqual(1000);
    expect(gaps[1]).toBeLessThan(1900);
    expect(gaps[2], 'Retry-After: 2').toBeGreaterThanOrEqual(2000);
    expect(JSON.parse(fs.readFileSync(path.join(home, 'drover', 'session.json'), 'utf8'))).toEqual({
      url: api.url,
      token: SIGNED_IN.token,
      expiresAt: SIGNED_IN.expiresAt,
      email: 'ops@example.com',
      userId: SIGNED_IN.user.id,
      // The coordinator's clock minus this machine's, from the answer's Date header (the same clock here).
      clockOffsetMs: expect.any(Number),
    });
  });
});
