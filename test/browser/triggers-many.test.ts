import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow } from '../helpers/agent.js';
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
 * An organization of more triggers than a page, in a real Chromium against a real coordinator:
 * the Triggers page shows the first 100 and how many there are, the next ones on asking, narrows
 * by type and name (kept in the address); the Jobs page finds a trigger to filter by by typing its
 * name, and names the triggers of its rows.
 */

const COUNT = 104;

describe.skipIf(!CHROMIUM)('an organization of many triggers', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  const ids = new Map<string, string>();

  beforeAll(async () => {
    t = await startTestCoordinator();
    const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: 'many-triggers' });
    const reported = await agent.putWorkflows([workflow('hello')]);
    expect(reported.status, reported.text).toBe(200);
    for (let i = 1; i <= COUNT; i++) {
      const name = `deploy ${String(i).padStart(3, '0')}`;
      const body =
        i % 50 === 0
          ? { name, type: 'cron', agentId: agent.agentId, scopeType: 'workflow', workflowName: 'hello' }
          : { name, agentId: agent.agentId, scopeType: 'workflow', workflowName: 'hello', responseMode: 'async' };
      const res = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
        body: i % 50 === 0 ? { ...body, cronExpression: '0 4 * * *' } : body,
      });
      expect(res.status, res.text).toBe(201);
      ids.set(name, res.body.id);
    }
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page]);

  const page = (): Page => owner.page;
  const rows = () => page().getByRole('table').getByRole('row');
  const count = () => page().getByRole('search', { name: 'Filter the triggers' }).getByRole('status');

  it('shows the first page of triggers, oldest first, with how many there are, and the next on asking', async () => {
    await page().goto(`/orgs/${t.orgId}/triggers`);
    await expect.poll(() => count().innerText()).toBe(`${COUNT} triggers.`);
    // A header row and a page of 100.
    expect(await rows().count()).toBe(101);
    expect(await rows().nth(1).getAttribute('aria-label')).toBe('deploy 001');
    expect(await page().getByRole('row', { name: 'deploy 101' }).count()).toBe(0);
    await page().getByRole('button', { name: 'Show the next 100 triggers' }).click();
    await page()
      .getByRole('row', { name: `deploy ${COUNT}` })
      .waitFor();
    expect(await rows().count()).toBe(COUNT + 1);
    expect(
      await page()
        .getByRole('button', { name: /Show the next/ })
        .count(),
    ).toBe(0);
    await expectAccessible(page(), 'the Triggers page');
  });

  it('narrows the list by type and by a part of the name, kept in the address', async () => {
    await page().getByLabel('Type').selectOption('cron');
    await expect.poll(() => count().innerText()).toBe('2 triggers match.');
    expect(await rows().count()).toBe(3);
    expect(page().url()).toContain('type=cron');

    await page().getByLabel('Type').selectOption('');
    await page().getByRole('searchbox', { name: 'Name' }).fill('DEPLOY 09');
    await expect.poll(() => count().innerText()).toBe('10 triggers match.');
    expect(page().url()).toContain('q=DEPLOY+09');
    // The address gives the same list again.
    await page().reload();
    await expect.poll(() => count().innerText()).toBe('10 triggers match.');
    expect(await page().getByRole('searchbox', { name: 'Name' }).inputValue()).toBe('DEPLOY 09');

    await page().getByRole('searchbox', { name: 'Name' }).fill('no such trigger');
    await page().getByText('No trigger matches these filters.').waitFor();
    // An address with more of a name than a name holds (255 characters) matches none, with its filters.
    await page().goto(`/orgs/${t.orgId}/triggers?q=${'x'.repeat(300)}`);
    await page().getByText('No trigger matches these filters.').waitFor();
    expect(await page().getByRole('searchbox', { name: 'Name' }).inputValue()).toBe('x'.repeat(300));
  });

  it('keeps the Name field, and its focus, when a filter that matched nothing is cleared', async () => {
    // Opened at the address of a filter that matches nothing: the unfiltered list is not read yet.
    await page().goto(`/orgs/${t.orgId}/triggers?q=no+such+trigger`);
    await page().getByText('No trigger matches these filters.').waitFor();
    const box = page().getByRole('searchbox', { name: 'Name' });
    await box.focus();
    // The unfiltered list is held back while the field is cleared.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let asked = false;
    const unfiltered = /\/triggers\?limit=100$/;
    await page().route(unfiltered, async (route) => {
      asked = true;
      await held;
      await route.continue();
    });
    try {
      await page().keyboard.press('ControlOrMeta+A');
      await page().keyboard.press('Backspace');
      await expect.poll(() => asked).toBe(true);
      expect(await page().getByText('No trigger yet.').count()).toBe(0);
      expect(await box.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    } finally {
      release();
    }
    await expect.poll(() => count().innerText()).toBe(`${COUNT} triggers.`);
    await page().unroute(unfiltered);
    expect(await box.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
  });

  it('finds a trigger to filter the jobs by by typing its name, and names the triggers of the rows', async () => {
    const wanted = ids.get('deploy 077')!;
    for (const name of ['deploy 077', 'deploy 003']) {
      const run = await t.owner.post(`/orgs/${t.orgId}/triggers/${ids.get(name)}/run`, { body: {} });
      expect(run.status, run.text).toBe(202);
    }
    await page().goto(`/orgs/${t.orgId}/jobs`);
    const jobs = page().getByRole('table');
    await jobs.getByRole('row', { name: /deploy 077/ }).waitFor();
    await jobs.getByRole('row', { name: /deploy 003/ }).waitFor();

    const filter = page().getByRole('form', { name: 'Filter jobs' });
    // The picker offers the first 20 of 104 and says how many more match.
    await filter.getByText('84 more triggers match: type more of the name.').waitFor();
    expect(await filter.getByRole('option', { name: 'deploy 077' }).count()).toBe(0);
    // A trigger chosen, then out of the search again (not applied, and no row names it): still by its name.
    const unseen = ids.get('deploy 088')!;
    await filter.getByRole('searchbox', { name: 'Find a trigger' }).fill('088');
    await filter.getByRole('option', { name: 'deploy 088' }).waitFor({ state: 'attached' });
    await filter.getByRole('combobox', { name: 'Trigger' }).selectOption(unseen);
    await filter.getByRole('searchbox', { name: 'Find a trigger' }).fill('');
    await filter.getByText('84 more triggers match: type more of the name.').waitFor();
    const chosen = filter.getByRole('combobox', { name: 'Trigger' }).locator('option:checked');
    expect(await chosen.innerText()).toBe('deploy 088');
    await filter.getByRole('searchbox', { name: 'Find a trigger' }).fill('077');
    await filter.getByRole('option', { name: 'deploy 077' }).waitFor({ state: 'attached' });
    await filter.getByRole('combobox', { name: 'Trigger' }).selectOption(wanted);
    await filter.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page().url()).toContain(`triggerId=${wanted}`);
    await expect.poll(() => jobs.getByRole('row').count()).toBe(2);
    expect(await jobs.getByRole('row').nth(1).innerText()).toContain('deploy 077');

    // The chosen trigger stays chosen, by its name, when the page opens at that address.
    await page().reload();
    const choice = filter.getByRole('combobox', { name: 'Trigger' });
    await expect.poll(() => choice.locator('option:checked').innerText()).toBe('deploy 077');
  });

  it("keeps the names it has read while those of a new job's trigger load", async () => {
    await page().goto(`/orgs/${t.orgId}/jobs`);
    const jobs = page().getByRole('table');
    await jobs.getByRole('row', { name: /deploy 077/ }).waitFor();
    // The names of the next set of triggers are held back until the new row is seen.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let asked = false;
    await page().route(/\/triggers\?id=/, async (route) => {
      asked = true;
      await held;
      await route.continue();
    });
    try {
      const run = await t.owner.post(`/orgs/${t.orgId}/triggers/${ids.get('deploy 010')}/run`, { body: {} });
      expect(run.status, run.text).toBe(202);
      await expect.poll(() => jobs.getByRole('row').count(), { timeout: 15_000 }).toBe(4);
      await expect.poll(() => asked).toBe(true);
      // The rows whose trigger's name was read keep it; the new one has its short id meanwhile.
      expect(await jobs.getByRole('row').nth(2).innerText()).toContain('deploy 003');
      expect(await jobs.getByRole('row').nth(3).innerText()).toContain('deploy 077');
      expect(await jobs.getByRole('row').nth(1).innerText()).not.toContain('deleted trigger');
    } finally {
      release();
    }
    await jobs.getByRole('row', { name: /deploy 010/ }).waitFor();
    await page().unroute(/\/triggers\?id=/);
  });
});
