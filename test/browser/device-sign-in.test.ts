import type { Schema } from '@drover/shared/api';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHROMIUM,
  docScreenshot,
  expectAccessible,
  launchBrowser,
  openPage,
  screenshotOnFailure,
  type TestPage,
} from '../helpers/browser.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';

/**
 * Signing in the command line through the browser (docs/dashboard.md, "Device sign-in") in a real
 * Chromium: a client starts a device sign-in over plain HTTP, as the CLI does; its user opens the
 * address it gives, not signed in, signs in (with a password, or single sign-on as a user of no
 * organization) and comes back to the page with the code, approves or denies it; the client's
 * polls then get a session that works once, or the refusal.
 */

type DeviceSignInStart = Schema<'DeviceSignInStart'>;

const NOT_FOUND = 'No sign-in waits for this code: it is wrong, expired (codes last 10 minutes) or already used.';

describe.skipIf(!CHROMIUM)('device sign-in in a browser', () => {
  let offset = 0; // the coordinator's clock runs with the real one, moved by `offset` (polling interval)
  let provider: TestOidcProvider;
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let sso: TestPage | undefined;

  beforeAll(async () => {
    provider = await startOidcProvider({ sam: { email: 'sam@example.test' } });
    // Passwords and single sign-on both: the owner signs in with a password, sam by single sign-on.
    t = await startTestCoordinator({ env: provider.env, clock: { now: () => Date.now() + offset } });
    provider.attach(`${t.url}/v1/auth/oidc/callback`);
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await provider?.close();
  });
  screenshotOnFailure(() => [owner?.page, sso?.page]);

  /** `POST /v1/auth/device`, without credentials, as the command line starts. */
  const start = async (client?: string): Promise<DeviceSignInStart> => {
    const res = await t.api.post<DeviceSignInStart>('/auth/device', {
      token: null,
      body: client === undefined ? {} : { client },
    });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  /** A poll of the command line, an interval after the last (the coordinator's clock moved on). */
  const poll = async (started: DeviceSignInStart) => {
    offset += started.interval * 1000;
    return t.api.post('/auth/device/token', { token: null, body: { deviceCode: started.deviceCode } });
  };
  const waitForRequest = async (p: Page, userCode: string) => {
    await p.locator('.device-code').getByText(userCode).waitFor();
  };

  it('signs the command line in once a user signed in with a password approves its code', async () => {
    const started = await start('drover 1.4.0 on build-7');
    expect(started.userCode).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(started.verificationUri).toBe(`${t.url}/device`);
    expect(started.verificationUriComplete).toBe(`${t.url}/device?code=${started.userCode}`);
    expect((await poll(started)).status).toBe(202); // nobody approved yet

    const p = owner.page;
    await p.goto(started.verificationUriComplete);
    await p.waitForURL('**/login?next=*');
    expect(new URL(p.url()).searchParams.get('next')).toBe(`/device?code=${started.userCode}`);
    await p.getByLabel('Email').fill(OWNER_EMAIL);
    await p.getByLabel('Password').fill(OWNER_PASSWORD);
    await p.getByRole('button', { name: 'Sign in' }).click();

    await p.waitForURL(started.verificationUriComplete);
    await waitForRequest(p, started.userCode);
    await p.getByRole('heading', { name: `Sign in the command line as ${OWNER_EMAIL}?` }).waitFor();
    const facts = await p.locator('.device-request').innerText();
    expect(facts).toContain('drover 1.4.0 on build-7');
    expect(facts).toContain("the client's own words");
    const seen = await t.owner.get<Schema<'DeviceSignIn'>>(`/auth/device/${started.userCode}`);
    expect(seen.status, seen.text).toBe(200);
    expect(facts).toContain(seen.body.requestedFrom);
    expect(facts).toContain('Approve only a code you started yourself, in a terminal');
    expect(await p.getByLabel('Code', { exact: true }).inputValue()).toBe(started.userCode);
    await expectAccessible(p, 'the device sign-in page');
    await docScreenshot(p, 'device-sign-in');
    // Dark, and on a phone (a terminal's link opened there): readable, nothing wider than the screen.
    await p.emulateMedia({ colorScheme: 'dark' });
    await expectAccessible(p, 'the device sign-in page in dark mode');
    await p.setViewportSize({ width: 375, height: 800 });
    const overflow = await p.evaluate(() => {
      const root = (
        globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }
      ).document.documentElement;
      return root.scrollWidth - root.clientWidth;
    });
    expect(overflow, 'sideways overflow at 375 px').toBe(0);
    await p.emulateMedia({ colorScheme: 'light' });
    await p.setViewportSize({ width: 1280, height: 800 });

    await p.getByRole('button', { name: 'Approve' }).click();
    expect(await p.getByRole('status').innerText()).toBe(
      `The command line is signed in as ${OWNER_EMAIL}; you can close this page.`,
    );
    await expectAccessible(p, 'the device sign-in page, approved');

    const answer = await poll(started);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get('set-cookie')).toBeNull();
    expect(answer.body.user.email).toBe(OWNER_EMAIL);
    const session = await t.api.get('/auth/session', { token: answer.body.token });
    expect(session.status, session.text).toBe(200);
    expect(session.body.user.email).toBe(OWNER_EMAIL);

    const again = await poll(started);
    expect(again.status, again.text).toBe(410); // its session is handed out once
    expect(again.body.code).toBe('device_sign_in_expired');
    expect(owner.problems).toEqual([]);
  });

  it('refuses the command line a code the user denies, typed without its hyphen', async () => {
    const started = await start();
    const p = owner.page;
    // As someone copies it from the terminal: lower case, no hyphen.
    await p.goto(`/device?code=${started.userCode.replace('-', '').toLowerCase()}`);
    await waitForRequest(p, started.userCode);
    expect(await p.getByLabel('Code', { exact: true }).inputValue()).toBe(started.userCode);
    expect(await p.locator('.device-request').innerText()).not.toContain('Client');

    await p.getByRole('button', { name: 'Deny' }).click();
    expect(await p.getByRole('status').innerText()).toBe('Denied: the command line will not be signed in.');
    // Opened again, it is not offered for a decision any more.
    await p.reload();
    await p.getByRole('alert').waitFor();
    expect(await p.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    const answer = await poll(started);
    expect(answer.status, answer.text).toBe(403);
    expect(answer.body.code).toBe('device_sign_in_denied');
  });

  it('says so when the code was approved elsewhere meanwhile, or no sign-in waits for it', async () => {
    const started = await start();
    const p = owner.page;
    await p.goto(`/device?code=${started.userCode}`);
    await waitForRequest(p, started.userCode);
    const elsewhere = await t.owner.post(`/auth/device/${started.userCode}/approve`);
    expect(elsewhere.status, elsewhere.text).toBe(200);
    await p.getByRole('button', { name: 'Deny' }).click();
    expect(await p.getByRole('alert').innerText()).toBe(
      'This sign-in was already approved or denied: nothing more to do here.',
    );

    // A code typed by hand: not 8 letters is refused in the page; an unknown one by the coordinator.
    await p.goto('/device');
    const field = p.getByLabel('Code', { exact: true });
    await field.fill('bcdf-gh');
    await p.getByRole('button', { name: 'Look up' }).click();
    await p.getByText('a code is 8 letters, like WDJB-MJHT').waitFor();
    expect(await field.getAttribute('aria-invalid')).toBe('true');

    await field.fill('bcdfghjk');
    await p.getByRole('button', { name: 'Look up' }).click();
    await p.waitForURL('**/device?code=BCDF-GHJK');
    expect(await field.inputValue()).toBe('BCDF-GHJK');
    const alert = p.getByRole('alert');
    await alert.waitFor();
    expect((await alert.innerText()).split('\n')[0]).toBe(NOT_FOUND);
    await expectAccessible(p, 'the device sign-in page with an unknown code');
  });

  it('lets a user of no organization, signed in by single sign-on, approve', async () => {
    const started = await start('drover on sams-laptop');
    sso = await openPage(browser, t.url);
    const p = sso.page;
    await p.goto(started.verificationUriComplete);
    await p.waitForURL('**/login?next=*');
    await p.getByRole('link', { name: 'Sign in with single sign-on' }).click();
    await p.waitForURL(`${provider.issuer}/interaction/**`);
    await p.locator('input[name="login"]').fill('sam');
    await p.locator('input[name="password"]').fill('any password');
    await p.getByRole('button', { name: 'Sign-in' }).click();

    await p.waitForURL(started.verificationUriComplete);
    await waitForRequest(p, started.userCode);
    await p.getByRole('heading', { name: 'Sign in the command line as sam@example.test?' }).waitFor();
    await p.getByRole('button', { name: 'Approve' }).click();
    expect(await p.getByRole('status').innerText()).toBe(
      'The command line is signed in as sam@example.test; you can close this page.',
    );

    const answer = await poll(started);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.user.email).toBe('sam@example.test');
    const orgs = await t.api.get('/orgs', { token: answer.body.token });
    expect(orgs.status, orgs.text).toBe(200);
    expect(orgs.body).toEqual([]); // a user of no organization
    expect(sso.problems).toEqual([]);
  });
});
