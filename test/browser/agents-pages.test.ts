import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
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
import { createTestJob } from '../helpers/jobs.js';
import { WORKFLOWS } from '../helpers/trigger-runs.js';

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
  /** The workflows lists it asked for (the same). */
  const workflowsAsked: string[] = [];
  /** The fleet, oldest first: `kiosk-000` is `fleet[0]`. */
  const fleet: TestAgent[] = [];
  /** The trigger of kiosk-042 alone (made by the Jobs test). */
  let oneKiosk = '';

  beforeAll(async () => {
    t = await startTestCoordinator();
    for (let i = 0; i < FLEET; i++) {
      const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: `kiosk-${String(i).padStart(3, '0')}` });
      fleet.push(agent);
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
      if (url.pathname === `/v1/orgs/${t.orgId}/workflows`) workflowsAsked.push(url.search);
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

    // An address with more of a name than a name holds (255 characters) matches none, with its filters.
    await page().goto(`/orgs/${t.orgId}/agents?q=${'k'.repeat(300)}`);
    await page().getByText('No agent matches these filters.').waitFor();
    expect(await nameFilter().inputValue()).toBe('k'.repeat(300));
  });

  it("offers a token's agents 50 at a time, found by name on the coordinator, those ticked kept in sight", async () => {
    asked.length = 0;
    workflowsAsked.length = 0;
    await page().goto(`/orgs/${t.orgId}/api-tokens`);
    const group = page().getByRole('group', { name: 'Read agents and their workflows' });
    const boxes = group.getByRole('checkbox');
    await expect.poll(() => boxes.count()).toBe(50);
    await group.getByText(`${FLEET - 50} more agents match: find them by name.`).waitFor();
    const find = group.getByRole('searchbox', { name: 'Find agents by name' });
    await find.fill('KIOSK-10');
    await expect.poll(() => boxes.count()).toBe(5);
    await group.getByRole('checkbox', { name: /^kiosk-104 / }).check();
    await find.fill('kiosk-00');
    // The ten found, and the one ticked before, first and still ticked.
    await expect.poll(() => boxes.count()).toBe(11);
    expect(await group.locator('label.check').first().innerText()).toMatch(/^kiosk-104 /);
    expect(await boxes.first().isChecked()).toBe(true);
    // Enter in the search box finds: it does not issue the token half chosen (the search after it
    // is asked for after the POST it would send).
    const issued: string[] = [];
    const onRequest = (request: { method(): string; url(): string }) => {
      if (request.method() === 'POST') issued.push(request.url());
    };
    page().on('request', onRequest);
    await page().getByLabel('Name', { exact: true }).fill('fleet reader');
    await find.press('Enter');
    await find.fill('no such kiosk');
    await group.getByText('No agent has “no such kiosk” in its name or hostname.').waitFor();
    page().off('request', onRequest);
    expect(issued).toEqual([]);
    expect(await boxes.count()).toBe(1);
    expect(await page().getByLabel('Name', { exact: true }).inputValue()).toBe('fleet reader');
    await page().getByRole('button', { name: 'Issue token' }).click();
    await page().getByRole('row', { name: 'fleet reader' }).getByText('agents: kiosk-104').waitFor();
    const tokens = await t.owner.get<{ name: string; scopes: { type: string; agentIds?: string[] }[] }[]>(
      `/orgs/${t.orgId}/api-tokens`,
    );
    const agents = await t.owner.get<{ id: string; name: string }[]>(`/orgs/${t.orgId}/agents?q=kiosk-104`);
    expect(tokens.body.find((token) => token.name === 'fleet reader')?.scopes).toEqual([
      { type: 'agent', agentIds: [agents.body[0]!.id] },
    ]);
    // Never every agent, nor every workflow, of the organization.
    expect(asked.filter((search) => !/[?&](limit=\d+|id=)/.test(search))).toEqual([]);
    expect(workflowsAsked.length).toBeGreaterThan(0);
    expect(workflowsAsked.filter((search) => !/[?&]agentId=/.test(search))).toEqual([]);
    expect(owner.problems).toEqual([]);
  });

  it("names the agents the Jobs, job, Triggers and Audit pages show, and finds the Jobs filter's agent by name, never reading every agent", async () => {
    const [k007, k042, k050, k100] = [fleet[7]!, fleet[42]!, fleet[50]!, fleet[100]!];
    const jobs = [];
    for (const agent of [k007, k100, k007]) {
      jobs.push(
        await createTestJob(t, { agentId: agent.agentId, orgId: t.orgId }, { status: 'pending' }, { notify: false }),
      );
    }
    expect((await k042.putWorkflows([WORKFLOWS[0]!])).status).toBe(200);
    const one = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'one kiosk',
        agentId: k042.agentId,
        scopeType: 'workflow',
        workflowName: 'deploy',
        responseMode: 'async',
      },
    });
    expect(one.status, one.text).toBe(201);
    oneKiosk = (one.body as { id: string }).id;
    const gold = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'gold kiosks',
        agentSelector: 'tier=gold',
        fanout: 'all',
        scopeType: 'workflow',
        workflowName: 'deploy',
        responseMode: 'async',
      },
    });
    expect(gold.status, gold.text).toBe(201);
    const renamed = await t.owner.patch(`/orgs/${t.orgId}/agents/${k050.agentId}`, { body: { name: 'lobby-screen' } });
    expect(renamed.status, renamed.text).toBe(200);
    asked.length = 0;

    // The jobs' agents by name; the filter offers 20 agents and finds the others by name.
    await page().goto(`/orgs/${t.orgId}/jobs`);
    const jobRows = page().locator('table.jobs tbody tr');
    await expect.poll(() => jobRows.count()).toBe(3);
    await expect.poll(() => jobRows.locator('td', { hasText: /^kiosk-(007|100)$/ }).count()).toBe(3);
    const filter = page().getByRole('form', { name: 'Filter jobs' });
    const choices = filter.getByLabel('Agent', { exact: true }).locator('option');
    await expect.poll(() => choices.count()).toBe(21);
    await filter.getByText(`${FLEET - 20} more agents match: type more of the name.`).waitFor();
    await filter.getByRole('searchbox', { name: 'Find an agent' }).fill('KIOSK-00');
    await expect
      .poll(() => choices.allInnerTexts())
      .toEqual(['any', ...[9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map((i) => `kiosk-00${i}`)]);
    await filter.getByLabel('Agent', { exact: true }).selectOption({ label: 'kiosk-007' });
    await filter.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => new URL(page().url()).searchParams.get('agentId')).toBe(k007.agentId);
    await expect.poll(() => jobRows.count()).toBe(2);
    await expectAccessible(page(), 'the Jobs page filtered by an agent found by name');
    // The chosen agent stays offered, by name, on a page opened at that address.
    await page().reload();
    await expect
      .poll(() => filter.getByLabel('Agent', { exact: true }).locator('option:checked').innerText())
      .toBe('kiosk-007');

    // A job's page: its agent by name.
    await page().goto(`/api/jobs/${jobs[1]!.id}`);
    await page().getByRole('link', { name: 'kiosk-100' }).waitFor();

    // The triggers list: the agent of one, how many agents the other's selector matches.
    await page().goto(`/orgs/${t.orgId}/triggers`);
    await page().getByRole('row', { name: 'one kiosk' }).getByText('kiosk-042').waitFor();
    await page().getByRole('row', { name: 'gold kiosks' }).getByText('11 match now').waitFor();

    // The audit log: the renamed agent by its name.
    await page().goto(`/orgs/${t.orgId}/audit`);
    await page()
      .getByRole('row', { name: /renamed/ })
      .first()
      .getByRole('link', { name: 'lobby-screen' })
      .waitFor();

    expect(asked.length).toBeGreaterThan(0);
    expect(asked.filter((search) => !/[?&](limit=\d+|id=)/.test(search))).toEqual([]);
    expect(owner.problems).toEqual([]);
  });

  it("reads the one agent of a trigger and that agent's workflows on the trigger's page, not every agent and workflow", async () => {
    asked.length = 0;
    workflowsAsked.length = 0;
    await page().goto(`/orgs/${t.orgId}/triggers/${oneKiosk}`);
    await page().getByRole('heading', { name: 'one kiosk' }).waitFor();
    await page()
      .getByRole('definition')
      .filter({ hasText: /^kiosk-042$/ })
      .waitFor();
    // Run by hand: the form of the agent's workflow deploy, its parameter env.
    await page().getByRole('form', { name: 'Run by hand' }).getByLabel('env (required)').waitFor();
    expect(await page().getByText('The agent has not reported the workflow deploy').count()).toBe(0);
    expect(workflowsAsked).toEqual([`?agentId=${fleet[42]!.agentId}`]);
    expect(asked).toEqual([]);
    expect(owner.problems).toEqual([]);
  });

  it("offers a new trigger's agent among 20, finds it by name, and its workflows alone, never reading every agent", async () => {
    asked.length = 0;
    workflowsAsked.length = 0;
    await page().goto(`/orgs/${t.orgId}/triggers/new`);
    const agent = page().getByLabel('Agent', { exact: true });
    await expect.poll(() => agent.locator('option').count()).toBe(21);
    await page().getByRole('searchbox', { name: 'Find an agent' }).fill('kiosk-042');
    await expect.poll(() => agent.locator('option').allInnerTexts()).toEqual(['Choose an agent…', 'kiosk-042']);
    await agent.selectOption({ label: 'kiosk-042' });
    await page().getByLabel('Name', { exact: true }).fill('kiosk 42 by hand');
    // The workflows offered: those the chosen agent reports (deploy, made by the Jobs test).
    const offered = page().locator('#trigger-workflows option');
    await expect
      .poll(() => offered.evaluateAll((options) => options.map((o) => o.getAttribute('value'))))
      .toEqual(['deploy']);
    await page().getByLabel('Workflow', { exact: true }).fill('deploy');
    // Enter in the search box does not create the trigger (the search after it is asked for later).
    const sent: string[] = [];
    const onRequest = (request: { method(): string; url(): string }) => {
      if (request.method() === 'POST') sent.push(request.url());
    };
    page().on('request', onRequest);
    const find = page().getByRole('searchbox', { name: 'Find an agent' });
    await find.press('Enter');
    await find.fill('kiosk-04');
    await expect.poll(() => agent.locator('option').count()).toBe(11);
    page().off('request', onRequest);
    expect(sent).toEqual([]);
    await page().getByRole('button', { name: 'Create trigger' }).click();
    await page().getByRole('heading', { name: 'kiosk 42 by hand' }).waitFor();
    expect(workflowsAsked.every((query) => query === `?agentId=${fleet[42]!.agentId}`)).toBe(true);
    // Only searches of 20 (and the new trigger's one agent): never the whole list.
    expect(asked.every((query) => /[?&]limit=20\b/.test(query) || /[?&]id=/.test(query))).toBe(true);
    expect(owner.problems).toEqual([]);
  });

  it("shows what a selector trigger's selector matches from the coordinator, on its page and its form, never reading every agent and workflow", async () => {
    asked.length = 0;
    workflowsAsked.length = 0;
    const found = await t.owner.get<{ id: string }[]>(`/orgs/${t.orgId}/triggers?q=gold%20kiosks`);
    const gold = found.body[0]!.id;
    await page().goto(`/orgs/${t.orgId}/triggers/${gold}`);
    const matches = page().locator('.selector-matches');
    await expect.poll(() => matches.innerText()).toMatch(/^11 agents match now: /);
    expect(await matches.innerText()).toContain(
      'None of them reports the workflow deploy: every job would be rejected.',
    );
    await page().goto(`/orgs/${t.orgId}/triggers/${gold}/edit`);
    await page().getByLabel('Label selector', { exact: true }).fill('tier=gold,os=linux');
    await expect.poll(() => matches.innerText()).toMatch(/^11 agents match now: /);
    await page().getByLabel('Label selector', { exact: true }).fill('tier=platinum');
    await expect.poll(() => matches.innerText()).toBe('No agent matches now: a run is refused until one does.');
    expect(asked).toEqual([]);
    expect(workflowsAsked).toEqual([]);
    expect(owner.problems).toEqual([]);
  });

  it("keeps the labels set elsewhere while the labels form was open: the save is refused, and the form's changes made onto them", async () => {
    const agent = fleet[51]!;
    const path = `/orgs/${t.orgId}/agents/${agent.agentId}`;
    expect((await t.owner.patch(path, { body: { labels: { site: 'munich', rack: 'r1' } } })).status).toBe(200);
    await page().goto(path);
    await page().getByRole('button', { name: 'Edit labels' }).click();
    const form = page().getByRole('form', { name: "Edit the operators' labels of kiosk-051" });
    const label = (n: number) => form.getByRole('group', { name: `Label ${n}` });
    const rowsShown = async () => {
      const shown: string[] = [];
      for (let n = 1; n <= (await form.getByRole('group').count()); n++) {
        shown.push(
          `${await label(n).getByLabel('Key').inputValue()}=${await label(n).getByLabel('Value').inputValue()}`,
        );
      }
      return shown;
    };
    expect(await rowsShown()).toEqual(['rack=r1', 'site=munich']);
    await label(1).getByLabel('Value').fill('r2');
    await form.getByRole('button', { name: 'Remove label 2' }).click();
    // Meanwhile a script adds a label of its own.
    const script = await t.owner.patch(path, { body: { labels: { rack: 'r1', site: 'munich', tier: 'gold' } } });
    expect(script.status, script.text).toBe(200);

    await form.getByRole('button', { name: 'Save labels' }).click();
    const alert = form.getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toContain(
      "Nothing was saved: this agent was changed elsewhere since this form opened (its operators' labels or its name).",
    );
    expect((await t.owner.get(path)).body.operatorLabels).toEqual({ rack: 'r1', site: 'munich', tier: 'gold' });
    await expectAccessible(page(), 'the labels form refused as made from labels changed since');

    // The form's changes (rack changed, site removed) made onto the labels as they are now.
    await alert.getByRole('button', { name: 'Make my changes onto its labels as they are now' }).click();
    await form.getByRole('status').waitFor();
    expect(await form.getByRole('alert').count()).toBe(0);
    expect(await rowsShown()).toEqual(['rack=r2', 'tier=gold']);
    await form.getByRole('button', { name: 'Save labels' }).click();
    await page().getByRole('status').filter({ hasText: 'Labels saved.' }).waitFor();
    expect((await t.owner.get(path)).body.operatorLabels).toEqual({ rack: 'r2', tier: 'gold' });
  });

  it("labels every agent the page's selector matches, after a preview of what would change", async () => {
    // kiosk-000, -010, …, -100 report tier=gold (and any an earlier test gave it); kiosk-050 has ring=canary already.
    const listed = await t.owner.get<{ id: string }[]>(`/orgs/${t.orgId}/agents?selector=tier%3Dgold`);
    const gold = listed.body.map((a) => ({ agentId: a.id }));
    expect(gold.map((a) => a.agentId)).toContain(fleet[100]!.agentId);
    const canary = await t.owner.patch(`/orgs/${t.orgId}/agents/${fleet[50]!.agentId}`, {
      body: { labels: { ring: 'canary' } },
    });
    expect(canary.status, canary.text).toBe(200);
    await page().goto(`/orgs/${t.orgId}/agents?selector=${encodeURIComponent('tier=gold')}`);
    await expect.poll(() => count().innerText()).toBe(`${gold.length} of ${FLEET} agents match.`);
    await page().getByRole('button', { name: 'Label these agents' }).click();
    const form = page().getByRole('form', { name: 'Label the agents matching tier=gold' });
    const toSet = form.getByLabel('Labels to set');
    expect(await toSet.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(false);

    // Checked in the browser first: nothing is sent.
    await toSet.fill('Ring=canary');
    await form.getByRole('button', { name: 'Preview' }).click();
    expect(await form.getByRole('alert').innerText()).toContain('Labels to set: "Ring" is not a label key');
    await toSet.fill('ring=canary');
    await form.getByLabel('Labels to remove').fill('legacy');
    await form.getByRole('button', { name: 'Preview' }).click();
    const preview = form.getByRole('region', { name: /^Would change/ });
    await preview.waitFor();
    expect(await preview.getByRole('heading').innerText()).toBe(
      `Would change ${gold.length - 1} of ${gold.length} agents (1 has the labels already)`,
    );
    expect(await preview.getByRole('row').count()).toBe(gold.length); // the header and the agents that change
    expect(await preview.getByRole('row', { name: /kiosk-100/ }).innerText()).toMatch(/kiosk-100\s+none\s+ring=canary/);
    await expectAccessible(page(), 'the labels form of the agents a selector matches, previewed');
    expect((await t.owner.get(`/orgs/${t.orgId}/agents/${gold[0]!.agentId}`)).body.operatorLabels).toEqual({});

    await form.getByRole('button', { name: `Change ${gold.length - 1} agents` }).click();
    await page()
      .getByRole('status')
      .filter({ hasText: `Labelled ${gold.length - 1} of ${gold.length} agents (1 has the labels already).` })
      .waitFor();
    for (const agent of gold) {
      expect((await t.owner.get(`/orgs/${t.orgId}/agents/${agent.agentId}`)).body.operatorLabels).toMatchObject({
        ring: 'canary',
      });
    }
    expect(
      await page()
        .getByRole('button', { name: 'Label these agents' })
        .evaluate((el) => el === el.ownerDocument.activeElement),
    ).toBe(true);
    // The list shows the new labels.
    await expect.poll(() => rows().filter({ hasText: 'ring=canary' }).count()).toBe(gold.length);
  });
});
