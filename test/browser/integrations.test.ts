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
import { DISCORD_GUILD, discordEnv, FakeDiscord } from '../helpers/fake-discord.js';
import { FakeSlack, SLACK_TEAM, slackEnv } from '../helpers/fake-slack.js';
import { addUser, MEMBER_PASSWORD, outsider } from '../helpers/members.js';

/**
 * The Integrations page in a real Chromium against a real coordinator whose Slack and Discord
 * are fake servers with a consent page: an owner connects a Slack workspace and a Discord server
 * through the whole OAuth round trip in the browser (the coordinator's connect, the provider's
 * consent page, the callback, the dashboard's page that finishes the flow, back to the page),
 * sees a refusal in plain words, disconnects after a confirmation; a consent link opened in
 * another browser connects nothing and says why; a member sees no owner action; a coordinator
 * without the providers says what its operator must set. Every page is checked with axe-core and
 * for CSP violations. The consent pages are on `localhost`, another site than the coordinator's
 * `127.0.0.1`, as Slack's and Discord's are: the browser comes back from another site, without
 * the dashboard's SameSite=Strict cookies on that navigation.
 */

interface IntegrationBody {
  id: string;
  provider: string;
  teamId: string;
  teamName: string;
}

describe.skipIf(!CHROMIUM)('the Integrations page in a browser', () => {
  const slack = new FakeSlack();
  const discord = new FakeDiscord();
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let other: TestPage | undefined;

  beforeAll(async () => {
    await Promise.all([slack.start(), discord.start()]);
    const otherSite = (url: string) => url.replace('//127.0.0.1:', '//localhost:');
    const env = { ...slackEnv(slack), ...discordEnv(discord) };
    env.DROVER_SLACK_AUTHORIZE_URL = otherSite(env.DROVER_SLACK_AUTHORIZE_URL!);
    env.DROVER_DISCORD_AUTHORIZE_URL = otherSite(env.DROVER_DISCORD_AUTHORIZE_URL!);
    t = await startTestCoordinator({ env });
    await addUser(t.owner, t.orgId, 'member@example.test');
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD);
    await owner.page.waitForURL(`**/orgs/${t.orgId}`);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await Promise.all([slack.close(), discord.close()]);
  });
  screenshotOnFailure(() => [owner?.page, other?.page]);

  const page = (): Page => owner.page;
  const pageUrl = (orgId = t.orgId) => `/orgs/${orgId}/integrations`;
  const connected = () => page().getByRole('table', { name: 'Connected workspaces' });
  const integrations = async () =>
    (await t.owner.get<IntegrationBody[]>(`/orgs/${t.orgId}/chat-integrations`)).body.map((i) => i.provider);

  async function signIn(p: Page, email: string, password: string) {
    await p.goto('/login');
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  }

  it('lists no workspace yet, from the navigation, with Connect for each provider set up', async () => {
    await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Integrations' }).click();
    await page().getByRole('heading', { name: 'Integrations', level: 1 }).waitFor();
    expect(page().url()).toBe(`${t.url}${pageUrl()}`);
    await page().getByText('No workspace or server connected yet.').waitFor();
    await page().getByRole('region', { name: 'Slack' }).getByText('Slack is set up on this coordinator.').waitFor();
    await page().getByRole('button', { name: 'Connect Slack', exact: true }).waitFor();
    await page().getByRole('button', { name: 'Connect Discord', exact: true }).waitFor();
    await expectAccessible(page(), 'the empty Integrations page');
  });

  it('connects a Slack workspace through the OAuth round trip, and shows it', async () => {
    await page().getByRole('button', { name: 'Connect Slack', exact: true }).click();
    // Slack's consent page sends the browser to the coordinator's callback, then to the page
    // that finishes the flow, which comes back here.
    await page().getByRole('link', { name: 'Allow' }).click();
    const finishing = page().waitForURL('**/chat/slack/finish');
    const status = page().getByRole('status').filter({ hasText: 'Connected the' });
    await status.waitFor();
    await finishing;
    // The outcome is in the history entry's state, not in the address (a link could forge that).
    expect(page().url()).toBe(`${t.url}${pageUrl()}`);
    expect(slack.received('GET', '/oauth/v2/authorize')).toHaveLength(1);
    expect(await status.innerText()).toContain(`Connected the Slack workspace ${SLACK_TEAM.name}.`);
    const row = connected().getByRole('row', { name: SLACK_TEAM.name });
    // Who connected it, once the members have loaded.
    await row.getByText(OWNER_EMAIL).waitFor();
    expect(await row.innerText()).toMatch(new RegExp(`Slack\\s+${SLACK_TEAM.id}\\s+${OWNER_EMAIL}`));
    expect(await integrations()).toEqual(['slack']);
    await expectAccessible(page(), 'the Integrations page after connecting Slack');
    await status.getByRole('button', { name: 'Dismiss' }).click();
    await status.waitFor({ state: 'detached' });
    // A link cannot put its words there.
    await page().goto(`${pageUrl()}?connected=slack&team=${encodeURIComponent('Support: call +1 555 0100')}&error=x`);
    await page().getByRole('heading', { name: 'Integrations', level: 1 }).waitFor();
    await connected().getByRole('row', { name: SLACK_TEAM.name }).waitFor();
    expect(await page().getByText('Support: call').count()).toBe(0);
    expect(await page().getByRole('alert').count()).toBe(0);
  });

  it('connects a Discord server the same way', async () => {
    await page().getByRole('button', { name: 'Connect Discord', exact: true }).click();
    await page().getByRole('link', { name: 'Allow' }).click();
    await page().getByText(`Connected the Discord server ${DISCORD_GUILD.name}.`).waitFor();
    const row = connected().getByRole('row', { name: DISCORD_GUILD.name });
    // Who connected it, once the members have loaded.
    await row.getByText(OWNER_EMAIL).waitFor();
    expect(await row.innerText()).toMatch(new RegExp(`Discord\\s+${DISCORD_GUILD.id}\\s+${OWNER_EMAIL}`));
    expect((await integrations()).sort()).toEqual(['discord', 'slack']);
    await docScreenshot(page(), 'integrations');
  });

  it('shows the refusal the provider sent the browser back with: consent denied', async () => {
    await page().getByRole('button', { name: 'Connect Slack', exact: true }).click();
    await page().getByRole('link', { name: 'Cancel' }).click();
    const alert = page().getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toContain('Connecting failed: Slack was not connected: the app was not allowed');
    await expectAccessible(page(), 'the Integrations page with a refused connection');
  });

  it("shows the refusal of a workspace that is another organization's", async () => {
    const second = await outsider(t.owner, t.orgId, 'second-owner@example.test');
    other = await openPage(browser, t.url);
    await signIn(other.page, 'second-owner@example.test', MEMBER_PASSWORD);
    await other.page.waitForURL('**/orgs/*');
    await other.page.goto(pageUrl(second.orgId));
    await other.page.getByRole('button', { name: 'Connect Slack', exact: true }).click();
    await other.page.getByRole('link', { name: 'Allow' }).click();
    await other.page.getByRole('alert').waitFor();
    expect(await other.page.getByRole('alert').innerText()).toContain(
      `Slack workspace ${SLACK_TEAM.name} is connected to another organization: disconnect it there first`,
    );
    await other.page.getByText('No workspace or server connected yet.').waitFor();
    expect(other.problems).toEqual([]);
    await other.context.close();
    other = undefined;
  });

  it('connects nothing from a consent link opened in another browser, and says why there', async () => {
    // The link an owner's Connect made (here through the API, whose caller holds no browser of ours).
    const started = await t.owner.post<{ authorizeUrl: string }>(`/orgs/${t.orgId}/chat-integrations/discord/connect`);
    const elsewhere = await openPage(browser, t.url);
    try {
      // The same owner, signed in, in another browser: not the one that pressed Connect.
      await signIn(elsewhere.page, OWNER_EMAIL, OWNER_PASSWORD);
      await elsewhere.page.waitForURL(`**/orgs/${t.orgId}`);
      await elsewhere.page.goto(started.body.authorizeUrl);
      await elsewhere.page.getByRole('link', { name: 'Allow' }).click();
      await elsewhere.page.getByRole('heading', { name: 'Connecting Discord', level: 1 }).waitFor();
      const alert = elsewhere.page.getByRole('alert');
      await alert.waitFor();
      expect(await alert.innerText()).toMatch(
        /^Not allowed: This Discord sign-in was started in another browser: it can be finished only in the browser that pressed Connect\. Nothing was connected/,
      );
      // The code and the state are gone from the address bar.
      expect(new URL(elsewhere.page.url()).search).toBe('');
      expect(discord.received('POST', '/api/v10/oauth2/token')).toHaveLength(1);
      await expectAccessible(elsewhere.page, 'a refused connection');
      await elsewhere.page.getByRole('link', { name: 'Back to the dashboard' }).click();
      await elsewhere.page.waitForURL(`**/orgs/${t.orgId}`);
      expect(elsewhere.problems).toEqual([]);
    } finally {
      await elsewhere.context.close();
    }
  });

  it('shows a member the workspaces without any owner action', async () => {
    const member = await openPage(browser, t.url);
    try {
      await signIn(member.page, 'member@example.test', MEMBER_PASSWORD);
      await member.page.waitForURL(`**/orgs/${t.orgId}`);
      await member.page.goto(pageUrl());
      await member.page
        .getByRole('table', { name: 'Connected workspaces' })
        .getByRole('row', { name: SLACK_TEAM.name })
        .waitFor();
      await member.page.getByText('An owner of the organization connects a workspace.').waitFor();
      expect(await member.page.getByRole('button', { name: /^Connect / }).count()).toBe(0);
      expect(await member.page.getByRole('button', { name: /^Disconnect/ }).count()).toBe(0);
      await expectAccessible(member.page, "a member's Integrations page");
      expect(member.problems).toEqual([]);
    } finally {
      await member.context.close();
    }
  });

  it('disconnects a workspace after a confirmation', async () => {
    await page().goto(pageUrl());
    const label = `Slack workspace ${SLACK_TEAM.name}`;
    await page()
      .getByRole('button', { name: `Disconnect ${label}` })
      .click();
    const confirm = page().getByRole('group', { name: `Disconnect ${label}` });
    expect(await confirm.innerText()).toContain(`Disconnect the ${label}?`);
    await expectAccessible(page(), 'the disconnect confirmation');
    await confirm.getByRole('button', { name: 'Keep it' }).click();
    expect(await integrations()).toContain('slack');
    await page()
      .getByRole('button', { name: `Disconnect ${label}` })
      .click();
    await confirm.getByRole('button', { name: 'Disconnect for good' }).click();
    await connected().getByRole('row', { name: SLACK_TEAM.name }).waitFor({ state: 'detached' });
    expect(await integrations()).toEqual(['discord']);
    expect(owner.problems).toEqual([]);
  });
});

describe.skipIf(!CHROMIUM)('the Integrations page of a coordinator without chat providers', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  beforeAll(async () => {
    t = await startTestCoordinator();
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page]);

  it('says what the operator must set for each provider, and offers no Connect', async () => {
    const page = owner.page;
    await page.goto(`/orgs/${t.orgId}/integrations`);
    await page.waitForURL('**/login?next=*');
    await page.getByLabel('Email').fill(OWNER_EMAIL);
    await page.getByLabel('Password').fill(OWNER_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Integrations', level: 1 }).waitFor();
    const slack = page.getByRole('region', { name: 'Slack' });
    await slack.getByText('Slack is not set up on this coordinator.').waitFor();
    expect(await slack.innerText()).toContain(
      'Its operator sets DROVER_SLACK_CLIENT_ID, DROVER_SLACK_CLIENT_SECRET and DROVER_SLACK_SIGNING_SECRET',
    );
    expect(await page.getByRole('region', { name: 'Discord' }).innerText()).toContain(
      'DROVER_DISCORD_APPLICATION_ID, DROVER_DISCORD_PUBLIC_KEY, DROVER_DISCORD_CLIENT_SECRET and DROVER_DISCORD_BOT_TOKEN',
    );
    expect(await page.getByRole('button', { name: /^Connect / }).count()).toBe(0);
    await expectAccessible(page, 'the Integrations page without providers');
    await docScreenshot(page, 'integrations-not-set-up');
    expect(owner.problems).toEqual([]);
  });
});
