import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limitsPatch, textsOf } from '../../dashboard/src/components/limit-texts.js';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
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
import { createTestJob } from '../helpers/jobs.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';

/**
 * An agent's workflows on its page, with their rate limits, in a real Chromium against a real
 * coordinator: an owner changes a workflow's limits (a refusal under its input, a change of
 * another owner's to a window left alone kept), clears one, cancels with Escape; the page shows
 * the agent's last jobs; the Agents page says which workflows are limited; a member reads the
 * limits without a way to change them.
 */

interface ManagedWorkflow {
  id: string;
  name: string;
  rateLimitPerMinute: number | null;
  rateLimitPerHour: number | null;
  rateLimitPerDay: number | null;
}

describe.skipIf(!CHROMIUM)("a workflow's rate limits on its agent's page", () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let member: TestPage | undefined;
  let agent: TestAgent;

  beforeAll(async () => {
    t = await startTestCoordinator();
    agent = await enrollTestAgent(t.owner, t.orgId, { hostname: 'press-07' });
    const put = await agent.putWorkflows([
      workflow('deploy', {
        description: 'Deploys a release',
        paramsSchema: [{ name: 'ref', type: 'string', required: true }],
      }),
      workflow('reboot'),
    ]);
    expect(put.status, put.text).toBe(200);
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
  const row = (p: Page, name: string) => p.getByRole('table').getByRole('row', { name });
  const form = () => page().getByRole('form', { name: 'Rate limits of deploy on press-07' });
  const saved = () => page().getByRole('region', { name: 'Workflows' }).getByRole('status');
  const deploy = async () => {
    const list = await t.owner.get<ManagedWorkflow[]>(`/orgs/${t.orgId}/workflows`);
    return list.body.find((w) => w.name === 'deploy')!;
  };

  it('changes the windows an owner changed, each refusal under its input, the keyboard back on the button', async () => {
    await page().goto(`/orgs/${t.orgId}/agents/${agent.agentId}`);
    await expect.poll(() => row(page(), 'deploy').innerText()).toContain('no limit');
    expect(await row(page(), 'deploy').innerText()).toContain('ref: string, required');
    const edit = row(page(), 'deploy').getByRole('button', { name: 'Edit limits of deploy' });
    await edit.click();
    const perMinute = form().getByLabel('Runs a minute');
    await expect.poll(() => perMinute.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);

    // 0 is the coordinator's to refuse: its reason under the input, the input marked.
    await perMinute.fill('0');
    await form().getByLabel('Runs a day').fill('500');
    await form().getByRole('button', { name: 'Save limits' }).click();
    await form().getByText('Some fields need a change; the reason is next to each.').waitFor();
    expect(await perMinute.getAttribute('aria-invalid')).toBe('true');
    expect(await page().locator('#limits-rateLimitPerMinute-error').innerText()).toBe('must be at least 1');
    expect((await deploy()).rateLimitPerDay).toBeNull(); // nothing of a refused change was kept
    await expectAccessible(page(), "an agent's workflows with the limits form refusing a value");

    // Meanwhile another owner limits the hour: a window this form did not change keeps it.
    const other = await t.owner.patch(`/orgs/${t.orgId}/workflows/${(await deploy()).id}`, {
      body: { rateLimitPerHour: 7 },
    });
    expect(other.status, other.text).toBe(200);
    await perMinute.fill('10');
    await perMinute.press('Enter');
    await expect.poll(() => saved().innerText()).toBe('deploy: Limits saved.');
    expect(await form().count()).toBe(0);
    expect(await row(page(), 'deploy').getByRole('cell').nth(1).innerText()).toBe('10 a minute, 7 an hour, 500 a day');
    expect(await row(page(), 'reboot').getByRole('cell').nth(1).innerText()).toBe('no limit');
    await expect.poll(() => edit.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    expect(await deploy()).toMatchObject({ rateLimitPerMinute: 10, rateLimitPerHour: 7, rateLimitPerDay: 500 });
    const audit = await t.owner.get<{ action: string; metadata: { to: unknown } }[]>(
      `/orgs/${t.orgId}/audit?action=workflow.update_limits`,
    );
    expect(audit.body.map((e) => e.metadata.to)).toContainEqual({ perMinute: 10, perHour: 7, perDay: 500 });

    // An emptied input is no limit; a form left as it opened sends nothing; Escape leaves it.
    await edit.click();
    await form().getByLabel('Runs a day').fill('');
    await docScreenshot(page(), 'workflow-limits');
    await form().getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(() => row(page(), 'deploy').getByRole('cell').nth(1).innerText()).toBe('10 a minute, 7 an hour');
    await edit.click();
    await form().getByRole('button', { name: 'Save limits' }).click();
    await expect.poll(() => saved().innerText()).toBe('deploy: Nothing changed.');
    await edit.click();
    await form().getByLabel('Runs an hour').fill('99');
    await form().getByLabel('Runs an hour').press('Escape');
    expect(await form().count()).toBe(0);
    expect((await deploy()).rateLimitPerHour).toBe(7);
    expect(owner.problems).toEqual([]);
  });

  it("shows the agent's last jobs, leading to all of them on the Jobs page", async () => {
    const other = await enrollTestAgent(t.owner, t.orgId, { hostname: 'press-08' });
    await createTestJob(t, agent, { workflowName: 'reboot', status: 'rejected', ref: null }, { notify: false });
    await createTestJob(t, other, { workflowName: 'elsewhere' }, { notify: false });
    await page().goto(`/orgs/${t.orgId}/agents/${agent.agentId}`);
    const recent = page().getByRole('table', { name: 'Recent jobs' });
    await expect.poll(() => recent.getByRole('row').count()).toBe(2); // the header and its one job
    expect(await recent.innerText()).toContain('reboot');
    expect(await recent.innerText()).not.toContain('elsewhere');
    await page().getByRole('link', { name: 'All jobs on this agent' }).click();
    await page().waitForURL(`**/orgs/${t.orgId}/jobs?agentId=${agent.agentId}`);
  });

  it('says on the Agents page which workflows are limited', async () => {
    await page().goto(`/orgs/${t.orgId}/agents`);
    const cell = page().getByRole('row', { name: 'press-07' });
    await expect.poll(() => cell.innerText()).toContain('deploy Deploys a release (limited: 10 a minute, 7 an hour)');
    expect(await cell.innerText()).not.toContain('reboot reboot workflow (limited');
  });

  it('shows a member the limits without a way to change them', async () => {
    const { client } = await addUser(t.owner, t.orgId, 'member@example.test', 'member');
    member = await openPage(browser, t.url);
    await signIn(member.page, 'member@example.test', MEMBER_PASSWORD, t.orgId);
    await member.page.goto(`/orgs/${t.orgId}/agents/${agent.agentId}`);
    await expect.poll(() => row(member!.page, 'deploy').innerText()).toContain('10 a minute, 7 an hour');
    expect(await member.page.getByRole('button', { name: /Edit limits/ }).count()).toBe(0);
    // The API is the guard: a member's change is a 403.
    const refused = await client.patch(`/orgs/${t.orgId}/workflows/${(await deploy()).id}`, {
      body: { rateLimitPerMinute: 1 },
    });
    expect(refused.status).toBe(403);
    expect(member.problems).toEqual([]);
  });
});

describe('the change a workflow limits form sends', () => {
  const opened = textsOf({ rateLimitPerMinute: 10, rateLimitPerHour: null, rateLimitPerDay: 500 });

  it('sends only the windows changed: a number as typed, an emptied one as null', () => {
    expect(limitsPatch(opened, { ...opened })).toEqual({});
    expect(limitsPatch(opened, { ...opened, rateLimitPerMinute: ' 20 ', rateLimitPerDay: '' })).toEqual({
      rateLimitPerMinute: 20,
      rateLimitPerDay: null,
    });
    // What the coordinator refuses is sent for it to say why.
    expect(limitsPatch(opened, { ...opened, rateLimitPerHour: '2.5' })).toEqual({ rateLimitPerHour: 2.5 });
  });
});
