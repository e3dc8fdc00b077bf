import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent } from '../helpers/agent.js';
import {
  CHROMIUM,
  expectAccessible,
  launchBrowser,
  openPage,
  screenshotOnFailure,
  signIn,
  type TestPage,
} from '../helpers/browser.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';

/**
 * The Agents page of a fleet larger than a page: the coordinator sends 100 agents at a time, the
 * filters (name, status, selector) are applied by it, and the count says how many match in all.
 */

const FLEET = 105;

describe.skipIf(!CHROMIUM)('the Agents page of a fleet larger than a page', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  /** The agents lists the page asked for (their query strings). */
  const asked: string[] = [];

  beforeAll(async () => {
    t = await startTestCoordinator();
    for (let i = 0; i < FLEET; i++) {
      const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: `kiosk-${String(i).padStart(3, '0')}` });
      if (i % 10 === 0) {
        const labels = await agent.request('PUT', '/v1/agent/labels', {
          labels: { os: 'linux', arch: 'x64', tier: 'gold' },
        });
        expect(labels.status, labels.text).toBe(200);
      }
    }
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
    owner.page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname === `/v1/orgs/${t.orgId}/agents`) asked.push(url.search);
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page]);

  const page = (): Page => owner.page;
  const rows = () => page().locator('table.agents tbody tr');
  const nameFilter = () => page().getByRole('searchbox', { name: 'Name' });
  const count = () => page().getByRole('search', { name: 'Filter the agents' }).getByRole('status');

  it('shows 100 agents, the next ones on asking, and narrows the list on the coordinator', async () => {
    await page().goto(`/orgs/${t.orgId}/agents`);
    await expect.poll(() => count().innerText()).toBe(`${FLEET} agents.`);
    expect(await rows().count()).toBe(100);
    // Most recently registered first.
    expect(await rows().first().getAttribute('aria-label')).toBe(`kiosk-${FLEET - 1}`);
    await page().getByRole('button', { name: 'Show the next 100 agents' }).click();
    await expect.poll(() => rows().count()).toBe(FLEET);
    expect(await rows().last().getAttribute('aria-label')).toBe('kiosk-000');
    expect(await page().getByRole('button', { name: 'Show the next 100 agents' }).count()).toBe(0);
    // Never the whole fleet in one answer.
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.filter((search) => !/[?&]limit=\d+/.test(search))).toEqual([]);

    // A name, in any case: kiosk-100 to kiosk-104.
    await nameFilter().fill('KIOSK-10');
    await expect.poll(() => count().innerText()).toBe(`5 of ${FLEET} agents match.`);
    expect(await rows().count()).toBe(5);
    expect(new URL(page().url()).searchParams.get('q')).toBe('KIOSK-10');
    // With a selector too: kiosk-100 alone carries tier=gold among them.
    await page().getByLabel('Selector').fill('tier=gold');
    await expect.poll(() => count().innerText()).toBe(`1 of ${FLEET} agents match.`);
    expect(await rows().first().getAttribute('aria-label')).toBe('kiosk-100');
    await expectAccessible(page(), 'the Agents page narrowed by name and selector');
    await nameFilter().fill('');
    await expect.poll(() => count().innerText()).toBe(`11 of ${FLEET} agents match.`);
    // And a status: none of them ever connected.
    await page().getByLabel('Status').selectOption('connected');
    await expect.poll(() => count().innerText()).toBe(`0 of ${FLEET} agents match.`);
    await page().getByText('No agent matches these filters.').waitFor();
    expect(owner.problems).toEqual([]);
  });

  it("offers a token's agents 100 at a time, found by name, those ticked kept out of sight", async () => {
    await page().goto(`/orgs/${t.orgId}/api-tokens`);
    const group = page().getByRole('group', { name: 'Read agents and their workflows' });
    const boxes = group.getByRole('checkbox');
    await expect.poll(() => boxes.count()).toBe(100);
    await group.getByText('5 more agents match: find them by name.').waitFor();
    const find = group.getByRole('searchbox', { name: 'Find agents by name' });
    await find.fill('kiosk-10');
    await expect.poll(() => boxes.count()).toBe(5);
    await group.getByRole('checkbox', { name: /^kiosk-104 / }).check();
    await find.fill('kiosk-00');
    await expect.poll(() => boxes.count()).toBe(10);
    await group.getByText('1 chosen agent is not shown here.').waitFor();
    await page().getByLabel('Name', { exact: true }).fill('fleet reader');
    await page().getByRole('button', { name: 'Issue token' }).click();
    await page().getByText('fleet reader').first().waitFor();
    const tokens = await t.owner.get<{ name: string; scopes: { type: string; agentIds?: string[] }[] }[]>(
      `/orgs/${t.orgId}/api-tokens`,
    );
    const agents = await t.owner.get<{ id: string; name: string }[]>(`/orgs/${t.orgId}/agents?q=kiosk-104`);
    expect(tokens.body.find((token) => token.name === 'fleet reader')?.scopes).toEqual([
      { type: 'agent', agentIds: [agents.body[0]!.id] },
    ]);
  });
});
