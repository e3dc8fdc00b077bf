import { generateEd25519KeyPair } from '@drover/shared';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHROMIUM,
  docScreenshot,
  expectAccessible,
  launchBrowser,
  openPage,
  screenshotOnFailure,
  signIn,
  type TestPage,
} from '../helpers/browser.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';

/**
 * The enrollment tokens on the Agents page, in a real Chromium against a real coordinator: a token
 * made with the form is listed open with its maker; an owner revokes a member's, which then
 * enrolls nothing; the used one names the agent it enrolled; a member may revoke only their own.
 */

const MEMBER_EMAIL = 'tech@example.test';

describe.skipIf(!CHROMIUM)('enrollment tokens on the Agents page', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let member: TestPage | undefined;
  let memberClient: TestCoordinator['owner'];

  beforeAll(async () => {
    t = await startTestCoordinator();
    ({ client: memberClient } = await addUser(t.owner, t.orgId, MEMBER_EMAIL, 'member'));
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page, member?.page]);

  const page = (): Page => owner.page;
  const panel = (p: Page) => p.getByRole('region', { name: 'Enrollment tokens' });
  const row = (p: Page, label: string) => panel(p).getByRole('row', { name: label });
  const issue = async (client: TestCoordinator['owner'], name: string) => {
    const res = await client.post<{ id: string; token: string }>(`/orgs/${t.orgId}/enrollment-tokens`, {
      body: { name },
    });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const enroll = (enrollmentToken: string, name: string) =>
    t.api.post<{ agentId: string }>('/agent/enroll', {
      body: {
        enrollmentToken,
        publicKey: generateEd25519KeyPair().publicKey,
        hostname: name,
        os: 'linux',
        agentVersion: '1.0.0',
      },
    });

  it('lists a token made with the form as open, with its maker', async () => {
    await page().goto(`/orgs/${t.orgId}/agents`);
    await panel(page()).getByText('No open enrollment token: none can enroll a machine now.').waitFor();
    await page().getByLabel('Label (optional)').fill('rack 4');
    await page().getByRole('button', { name: 'Create enrollment token' }).click();
    await page().getByText('Token created; it works once').waitFor();
    await expect.poll(() => row(page(), 'rack 4').innerText()).toContain(OWNER_EMAIL);
    expect(await row(page(), 'rack 4').innerText()).toMatch(/open\s+until /);
  });

  it("revokes a member's token after asking, which then enrolls nothing, and shows it among the revoked", async () => {
    const leaked = await issue(memberClient, 'pasted in a ticket');
    await page().reload();
    await row(page(), 'pasted in a ticket').getByRole('button', { name: 'Revoke pasted in a ticket' }).click();
    const confirm = page().getByRole('group', { name: 'Revoke pasted in a ticket' });
    await expectAccessible(page(), 'the Agents page asking to revoke an enrollment token');
    await docScreenshot(page(), 'enrollment-tokens');
    await confirm.getByRole('button', { name: 'Revoke token' }).press('Enter');
    await expect.poll(() => row(page(), 'pasted in a ticket').count()).toBe(0);
    // The row and its button are gone: the keyboard stays in the panel, the revocation said.
    await expect
      .poll(() => panel(page()).getByRole('status').innerText())
      .toBe('Revoked pasted in a ticket: it enrolls nothing from now on.');
    expect(
      await panel(page())
        .getByLabel('Show')
        .evaluate((el) => el === el.ownerDocument.activeElement),
    ).toBe(true);
    const refused = await enroll(leaked.token, 'intruder');
    expect(refused.status).toBe(401);
    await panel(page()).getByLabel('Show').selectOption('revoked');
    await expect.poll(() => row(page(), 'pasted in a ticket').innerText()).toMatch(/revoked\s+revoked /);
    expect(await row(page(), 'pasted in a ticket').innerText()).toContain(MEMBER_EMAIL);
    expect(owner.problems).toEqual([]);
  });

  it('names the agent a used token enrolled, with a link to it', async () => {
    const used = await issue(t.owner, 'kiosk batch');
    const enrolled = await enroll(used.token, 'kiosk-17');
    expect(enrolled.status).toBe(201);
    await page().reload();
    await panel(page()).getByLabel('Show').selectOption('used');
    const link = row(page(), 'kiosk batch').getByRole('link', { name: 'kiosk-17' });
    await link.click();
    await page().waitForURL(`**/orgs/${t.orgId}/agents/${enrolled.body.agentId}`);
  });

  it('says so when the token enrolled a machine since the page read it, and shows it used', async () => {
    const spent = await issue(t.owner, 'spent meanwhile');
    await page().goto(`/orgs/${t.orgId}/agents`);
    await row(page(), 'spent meanwhile').getByRole('button', { name: 'Revoke spent meanwhile' }).click();
    expect((await enroll(spent.token, 'kiosk-18')).status).toBe(201);
    await page()
      .getByRole('group', { name: 'Revoke spent meanwhile' })
      .getByRole('button', { name: 'Revoke token' })
      .press('Enter');
    await expect
      .poll(() => panel(page()).getByRole('status').innerText())
      .toBe('Not revoked: spent meanwhile was already used to enroll an agent: revoke that agent instead.');
    // The list read anew: the token is no longer open, the keyboard is back on Show.
    await expect.poll(() => row(page(), 'spent meanwhile').count()).toBe(0);
    expect(
      await panel(page())
        .getByLabel('Show')
        .evaluate((el) => el === el.ownerDocument.activeElement),
    ).toBe(true);
  });

  it('lets a member revoke only their own tokens', async () => {
    await issue(memberClient, 'my laptop');
    await issue(t.owner, 'owners only');
    member = await openPage(browser, t.url);
    await signIn(member.page, MEMBER_EMAIL, MEMBER_PASSWORD, t.orgId);
    await member.page.goto(`/orgs/${t.orgId}/agents`);
    await row(member.page, 'my laptop').getByRole('button', { name: 'Revoke my laptop' }).waitFor();
    expect(await row(member.page, 'owners only').getByRole('button').count()).toBe(0);
    expect(await row(member.page, 'rack 4').getByRole('button').count()).toBe(0);
    expect(member.problems).toEqual([]);
  });
});
