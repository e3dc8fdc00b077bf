import type { Browser } from 'playwright-core';
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
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';

/**
 * Single sign-on in a real Chromium (docs/sso.md): on a coordinator whose passwords are off, the
 * sign-in page offers only the single sign-on button; it leads to the provider's own login page,
 * and back to the dashboard page the user asked for, signed in with the role the provider's group
 * gives, which the members page names. A refused sign-in comes back to the sign-in page with its reason.
 */
describe.skipIf(!CHROMIUM)('single sign-on in a browser', () => {
  let provider: TestOidcProvider;
  let t: TestCoordinator;
  let browser: Browser;
  let user: TestPage | undefined;

  beforeAll(async () => {
    provider = await startOidcProvider({
      ada: { email: 'ada@example.test', groups: ['ops'] },
      eve: { email: 'eve@elsewhere.test' },
    });
    t = await startTestCoordinator({
      env: {
        ...provider.env,
        DROVER_PASSWORD_LOGIN: 'off',
        DROVER_OIDC_ALLOWED_DOMAINS: 'example.test',
        DROVER_OIDC_ROLE_MAP: JSON.stringify({ ops: { org: 'acme', role: 'operator' } }),
      },
    });
    provider.attach(`${t.url}/v1/auth/oidc/callback`);
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await provider?.close();
  });
  screenshotOnFailure(() => [user?.page]);

  it('refuses a password sign-in with a clear error when passwords are off', async () => {
    const res = await t.api.post('/auth/login', { token: null, body: { email: 'ada@example.test', password: 'x' } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('password_sign_in_off');
    expect((await t.api.get('/auth/methods', { token: null })).body).toEqual({ password: false, oidc: true });
  });

  it("signs in through the provider's login page, back to the page asked for, with the group's role", async () => {
    user = await openPage(browser, t.url);
    const p = user.page;
    await p.goto(`/orgs/${t.orgId}/agents`);
    await p.waitForURL('**/login?next=*');
    const button = p.getByRole('link', { name: 'Sign in with single sign-on' });
    await button.waitFor();
    expect(await p.getByLabel('Password').count()).toBe(0);
    await expectAccessible(p, 'the sign-in page with single sign-on only');
    await docScreenshot(p, 'sign-in-sso');

    await button.click();
    await p.waitForURL(`${provider.issuer}/interaction/**`);
    await p.locator('input[name="login"]').fill('ada');
    await p.locator('input[name="password"]').fill('any password');
    await p.getByRole('button', { name: 'Sign-in' }).click();

    await p.waitForURL(`${t.url}/orgs/${t.orgId}/agents`);
    await p.getByRole('heading', { name: 'Agents', exact: true }).waitFor();
    // The header names the role once the organizations are read.
    await p.getByRole('banner').getByText('(operator)').waitFor();
    expect(await p.getByRole('banner').innerText()).toContain('ada@example.test');

    // The members page says which role the role map set, and for which group.
    await p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Members' }).click();
    const row = p.getByRole('row', { name: 'ada@example.test' });
    await row.getByText('by single sign-on: ops').waitFor();
    expect(await row.getByRole('cell').first().innerText()).toBe('operator by single sign-on: ops');
    await expectAccessible(p, 'the members page with a member the role map added');
    expect(user.problems).toEqual([]);
  });

  it('shows the reason of a refused sign-in on the sign-in page', async () => {
    const other = await openPage(browser, t.url);
    try {
      const p = other.page;
      await p.goto('/login');
      await p.getByRole('link', { name: 'Sign in with single sign-on' }).click();
      await p.waitForURL(`${provider.issuer}/interaction/**`);
      await p.locator('input[name="login"]').fill('eve');
      await p.locator('input[name="password"]').fill('any password');
      await p.getByRole('button', { name: 'Sign-in' }).click();
      await p.waitForURL('**/login?sso=refused');
      expect(await p.getByRole('alert').innerText()).toBe(
        'Single sign-on did not complete: the email domain elsewhere.test is not allowed to sign in here (allowed: example.test)',
      );
      await expectAccessible(p, 'the sign-in page with a refused single sign-on');

      // A link cannot put its own words there: the reason is the coordinator's, never the address's.
      await other.context.clearCookies();
      await p.goto('/login?sso=refused&ssoError=Your+account+is+locked%3A+call+us');
      expect(await p.getByRole('alert').innerText()).toBe('Single sign-on did not complete; sign in again.');
      expect(await p.getByText('locked').count()).toBe(0);
    } finally {
      await other.context.close();
    }
  });
});
