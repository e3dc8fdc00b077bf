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
import {
  artifactUploader,
  bindDevices,
  createApp,
  createRelease,
  uploadArtifact,
  type AppBody,
} from '../helpers/ota.js';

/**
 * An application with more devices than a page: the devices table reads 100 at a time, found by
 * agent name or state on the coordinator, and the releases' counts, the publish confirmation, the
 * device group preview and "Bind agents" read what the coordinator counts and finds, never every
 * device nor every agent.
 */

const FLEET = 105;

describe.skipIf(!CHROMIUM)('an application of more devices than a page', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let app: AppBody;
  /** The devices and agents lists the page asked for (their query strings). */
  const devicesAsked: string[] = [];
  const agentsAsked: string[] = [];

  beforeAll(async () => {
    t = await startTestCoordinator();
    const ids: string[] = [];
    for (let i = 0; i < FLEET; i++) {
      ids.push((await enrollTestAgent(t.owner, t.orgId, { hostname: `screen-${String(i).padStart(3, '0')}` })).agentId);
    }
    // One more, not bound: what "Bind agents" offers.
    await enrollTestAgent(t.owner, t.orgId, { hostname: 'spare-screen' });
    app = await createApp(t.owner, t.orgId, { slug: 'signage' });
    await bindDevices(t.owner, t.orgId, app.id, ids);
    const artifact = await uploadArtifact(await artifactUploader(t), 'signage 2.0');
    await createRelease(t.owner, t.orgId, app.id, { version: '2.0.0', artifactFileId: artifact });
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
    owner.page.on('request', (request) => {
      const url = new URL(request.url());
      if (request.method() !== 'GET') return;
      if (url.pathname === `/v1/orgs/${t.orgId}/apps/${app.id}/devices`) devicesAsked.push(url.search);
      if (url.pathname === `/v1/orgs/${t.orgId}/agents`) agentsAsked.push(url.search);
    });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page]);

  const page = (): Page => owner.page;
  const rows = () => page().getByRole('region', { name: 'Devices' }).locator('table tbody tr');
  const count = () => page().getByRole('search', { name: 'Filter the devices' }).getByRole('status');

  it('shows 100 devices, the next ones on asking, and narrows them on the coordinator', async () => {
    await page().goto(`/orgs/${t.orgId}/apps/${app.id}`);
    await expect.poll(() => count().innerText()).toBe(`${FLEET} devices.`);
    expect(await rows().count()).toBe(100);
    // The agents' names are read by id after the page of devices: they come once read.
    await expect.poll(() => rows().first().getAttribute('aria-label')).toBe('screen-000');
    await page().getByRole('button', { name: 'Show the next 100 devices' }).click();
    await expect.poll(() => rows().count()).toBe(FLEET);
    await expect.poll(() => rows().last().getAttribute('aria-label')).toBe(`screen-${FLEET - 1}`);

    const name = page().getByRole('searchbox', { name: 'Agent name' });
    await name.fill('SCREEN-10');
    await expect.poll(() => count().innerText()).toBe(`5 of ${FLEET} devices match.`);
    expect(await rows().count()).toBe(5);
    await page().getByLabel('State').selectOption('failed');
    await page().getByText('No device matches these filters.').waitFor();
    await expectAccessible(page(), 'the devices of an application, narrowed to none');
    await name.fill('');
    await page().getByLabel('State').selectOption('');
    await expect.poll(() => count().innerText()).toBe(`${FLEET} devices.`);
    expect(owner.problems).toEqual([]);
  });

  it('counts the devices a publish moves, previews a device group and offers agents to bind, from what the coordinator counts and finds', async () => {
    await page().getByRole('button', { name: 'Publish 2.0.0' }).click();
    const confirm = page().getByRole('group', { name: 'Publish 2.0.0' });
    await expect
      .poll(() => confirm.innerText())
      .toContain(`${FLEET} devices on channel stable will be told to update to 2.0.0.`);
    await confirm.getByRole('button', { name: 'Publish 2.0.0' }).click();
    const row = page().getByRole('row', { name: /^2\.0\.0/ });
    await expect.poll(() => row.innerText()).toContain(`${FLEET} updating`);

    const group = page().getByRole('form', { name: 'Device group' });
    await group.getByLabel('Device selector').fill('os=linux');
    const preview = group.getByRole('status').filter({ hasText: 'Applying it binds' });
    await expect
      .poll(() => preview.innerText())
      .toBe('No agent matches now: the selector binds nothing until one does. Applying it binds 0 agents.');

    const bind = page().getByRole('form', { name: 'Bind agents' });
    await bind.getByLabel('Find agents by name').fill('spare');
    await bind.getByLabel('spare-screen', { exact: true }).check();
    await bind.getByRole('button', { name: 'Bind 1 agent' }).click();
    await expect.poll(() => count().innerText()).toBe(`${FLEET + 1} devices.`);
    await bind.getByText('Each of these agents is bound to this application already, or revoked.').waitFor();

    // Never every device nor every agent.
    expect(devicesAsked.length).toBeGreaterThan(0);
    expect(devicesAsked.filter((search) => !/[?&](limit=\d+|agentId=)/.test(search))).toEqual([]);
    expect(agentsAsked.filter((search) => !/[?&](limit=\d+|id=)/.test(search))).toEqual([]);
    expect(owner.problems).toEqual([]);
  });
});
