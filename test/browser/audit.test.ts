import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollAgentStateDir, type AgentStateDir } from '../helpers/agent-daemon.js';
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
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';
import { eventually } from '../helpers/poll.js';
import { createTestJob } from '../helpers/jobs.js';
import { createApp, createRelease, publishRelease, uploadArtifact } from '../helpers/ota.js';
import { defaultBindingId, storageClient } from '../helpers/storage.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';
import { AUDIT_ACTIONS } from '../../coordinator/src/domain/model/audit.js';
import { AUDIT_TARGET_TYPES } from '@drover/shared';
import { newTimeOrderedId } from '../../coordinator/src/util/ids.js';
import { AUDIT_ACTIONS as ACTION_WORDS, TARGET_TYPES as TARGET_WORDS } from '../../dashboard/src/api/audit-words.js';

/**
 * The Audit log page in a real Chromium against a real coordinator: entries in plain words with
 * links to their targets, the filters in the address, paging by cursor, and the owners-only
 * message a member gets. Every page is checked with axe-core and for CSP violations. Its words
 * are held against every action the coordinator records.
 */

describe.skipIf(!CHROMIUM)('the Audit log page in a browser', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let member: TestPage | undefined;
  let a: AgentStateDir;
  let trigger: { id: string };
  let memberId: string;

  beforeAll(async () => {
    t = await startTestCoordinator();
    a = await enrollAgentStateDir(t);
    trigger = await runnableTrigger(t, a.agentId, 'hello');
    memberId = (await addUser(t.owner, t.orgId, 'member@example.test')).userId;
    await t.owner.patch(`/orgs/${t.orgId}/members/${memberId}`, { body: { role: 'owner' } });
    await t.owner.patch(`/orgs/${t.orgId}/members/${memberId}`, { body: { role: 'member' } });
    const binding = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: { name: 'archive', backend: 'local' },
    });
    expect(binding.status).toBe(201);
    // 55 more entries: the first page (50) ends among them.
    for (let i = 0; i < 55; i++) {
      const res = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: { name: `bulk-${i}` } });
      expect(res.status).toBe(201);
    }
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (a) fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true });
  });
  screenshotOnFailure(() => [owner?.page, member?.page]);

  const page = (): Page => owner.page;
  const rows = (p: Page = page()) => p.getByRole('table').getByRole('row');
  const signIn = async (p: Page, email: string, password: string) => {
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  };

  it('lists the entries newest first in plain words, 50 at a time, and shows older ones on demand', async () => {
    await page().goto(`/orgs/${t.orgId}`);
    await signIn(page(), OWNER_EMAIL, OWNER_PASSWORD);
    const nav = page().getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Audit log' }).click();
    await page().getByRole('heading', { name: 'Audit log' }).waitFor();
    expect(page().url()).toBe(`${t.url}/orgs/${t.orgId}/audit`);
    // Members' names come with a query of their own: until it answers, a member is shown by id.
    await eventually(
      async () => {
        const texts = await rows().allInnerTexts();
        return texts.length === 51 && texts[1]!.includes(`${OWNER_EMAIL} created the enrollment token bulk-54`);
      },
      20_000,
      '50 entries and the header row, the newest by its member',
    );
    await page().getByRole('button', { name: 'Show older entries' }).click();
    // 55 bulk tokens, the agent's enrollment token and enrollment, the trigger, its API token, the member's 4
    // (invited, joined, two role changes), the binding.
    await eventually(async () => (await rows().count()) === 65, 20_000, 'all 64 entries');
    expect(await page().getByRole('button', { name: 'Show older entries' }).count()).toBe(0);
    const all = await rows().allInnerTexts();
    expect(all.at(-1)).toContain(`${OWNER_EMAIL} created the enrollment token`);
    expect(all.join('\n')).toMatch(
      /changed the role of the member member@example\.test[\s\S]*from\s+member[\s\S]*to\s+owner/,
    );
    // The trigger and the agent link to their pages.
    const created = page().getByRole('row', { name: /created the trigger/ });
    await created.getByRole('link', { name: 'hello trigger' }).click();
    await page().waitForURL(`**/orgs/${t.orgId}/triggers/${trigger.id}`);
    await page().goBack();
    const enrolled = page().getByRole('row', { name: /agent daemon-test enrolled/ });
    expect(await enrolled.getByRole('link', { name: 'daemon-test' }).getAttribute('href')).toBe(
      `/orgs/${t.orgId}/agents`,
    );
    const promoted = page()
      .getByRole('row', { name: /changed the role of the member/ })
      .first();
    expect(await promoted.getByRole('link', { name: 'member@example.test' }).getAttribute('href')).toBe(
      `/orgs/${t.orgId}/members`,
    );
    const bound = page().getByRole('row', { name: /created the storage binding/ });
    expect(await bound.getByRole('link', { name: 'archive' }).getAttribute('href')).toBe(`/orgs/${t.orgId}/storage`);
    await expectAccessible(page(), 'the Audit log page');
    expect(owner.problems).toEqual([]);
  });

  it('filters by action, target and time, keeping the filters in the address', async () => {
    await page().goto(`/orgs/${t.orgId}/audit`);
    await page().getByLabel('Action').selectOption('member.update');
    await page().getByRole('button', { name: 'Filter' }).click();
    await page().waitForURL('**/audit?action=member.update');
    await eventually(async () => (await rows().count()) === 3, 20_000, 'the two role changes');
    await page().getByRole('button', { name: 'Clear' }).click();
    // Chosen at once, while the router has yet to draw the address Clear went to: the choice stays
    // once it does (the form starts over only from an address it did not apply itself).
    await page().getByLabel('Target type').selectOption('user');
    await page().waitForURL(`**/orgs/${t.orgId}/audit`);
    await eventually(async () => (await rows().count()) > 4, 20_000, 'every entry');
    expect(await page().getByLabel('Action').inputValue()).toBe('');
    expect(await page().getByLabel('Target type').inputValue()).toBe('user');
    await page().getByLabel('Target id').fill(memberId);
    await page().getByRole('button', { name: 'Filter' }).click();
    await page().waitForURL(`**/audit?targetType=user&targetId=${memberId}`);
    await eventually(async () => (await rows().count()) === 4, 20_000, "the member's three entries");
    expect((await rows().allInnerTexts()).slice(1).map((r) => r.match(/(joined|changed the role of)/)?.[0])).toEqual([
      'changed the role of',
      'changed the role of',
      'joined',
    ]);
    // An actor's name leads to their entries alone, the other filters kept; Anyone takes it away.
    await page()
      .getByRole('row', { name: /joined/ })
      .getByRole('link', { name: 'member@example.test' })
      .click();
    await page().waitForURL(`**/audit?targetType=user&targetId=${memberId}&actorId=${memberId}`);
    await eventually(async () => (await rows().count()) === 2, 20_000, 'the entry the member made');
    await page().getByText('Only by member@example.test').waitFor();
    await page().getByRole('button', { name: 'Filter' }).click(); // kept by the form
    await eventually(async () => (await rows().count()) === 2, 20_000, 'the same entry');
    expect(new URL(page().url()).searchParams.get('actorId')).toBe(memberId);
    await page().getByRole('button', { name: 'Anyone' }).click();
    await page().waitForURL(`**/audit?targetType=user&targetId=${memberId}`);
    await eventually(async () => (await rows().count()) === 4, 20_000, "the member's three entries again");
    await docScreenshot(page(), 'audit');

    // A range that ends before anything happened.
    await page().goto(`/orgs/${t.orgId}/audit?createdBefore=2020-01-01T00:00:00.000Z`);
    await page().getByText('No entry matches these filters.').waitFor();
    expect(await page().getByLabel('Before').inputValue()).toMatch(/^20(19-12-31|20-01-01)T/);
    // A refused filter is explained by the API's words.
    await page().goto(`/orgs/${t.orgId}/audit?actorType=robot`);
    const alert = page().getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toContain('actorType');
    await expectAccessible(page(), 'the filtered Audit log page');
    expect(owner.problems).toEqual([]);
  });

  it('names a release published, a device by its agent and a job by its number, each action in the filter', async () => {
    const app = await createApp(t.owner, t.orgId, { slug: 'edge-app' });
    const uploader = await storageClient(t, [await defaultBindingId(t)], ['read', 'write']);
    const artifact = await uploadArtifact(uploader, 'v1 bytes');
    const draft = await createRelease(t.owner, t.orgId, app.id, { version: '1.0.0', artifactFileId: artifact });
    await publishRelease(t.owner, t.orgId, app.id, draft.id);
    const bound = await t.owner.post(`/orgs/${t.orgId}/apps/${app.id}/devices`, { body: { agentIds: [a.agentId] } });
    expect(bound.status).toBe(201);
    // Two jobs of the same minute: their ids begin alike, their numbers do not.
    const minute = Date.now() - (Date.now() % 0x10000); // the first 8 hex digits change every 65.536 s
    const jobs = [
      await createTestJob(t, a.agent, { id: newTimeOrderedId(minute) }),
      await createTestJob(t, a.agent, { id: newTimeOrderedId(minute + 1) }),
    ];
    expect(jobs[0]!.id.slice(0, 8)).toBe(jobs[1]!.id.slice(0, 8));
    for (const job of jobs) expect((await t.owner.post(`/jobs/${job.id}/cancel`)).status).toBe(200);
    const numbers = await Promise.all(jobs.map(async (job) => (await t.owner.get(`/jobs/${job.id}`)).body.number));

    await page().goto(`/orgs/${t.orgId}/audit`);
    for (const [action, sentence] of [
      ['release.publish', `${OWNER_EMAIL} published the release 1.0.0`],
      ['device.bind', `${OWNER_EMAIL} bound the device daemon-test`],
    ] as const) {
      await page().getByLabel('Action').selectOption(action);
      await page().getByRole('button', { name: 'Filter' }).click();
      await page().waitForURL(`**/audit?action=${action}`);
      // The rows of the previous filter may still be shown: wait for this filter's one entry.
      await eventually(
        async () => {
          const texts = await rows().allInnerTexts();
          return texts.length === 2 && texts[1]!.includes(sentence);
        },
        20_000,
        `the ${action} entry`,
      );
    }
    const device = page().getByRole('row', { name: /bound the device/ });
    expect(await device.getByRole('link', { name: 'daemon-test' }).getAttribute('href')).toBe(
      `/orgs/${t.orgId}/apps/${app.id}`,
    );

    await page().goto(`/orgs/${t.orgId}/audit?action=job.cancel`);
    await eventually(async () => (await rows().count()) === 3, 20_000, 'the two cancels');
    for (const [i, job] of jobs.entries()) {
      const link = page().getByRole('link', { name: `deploy #${numbers[i]}` });
      expect(await link.getAttribute('href')).toBe(`/api/jobs/${job.id}`);
    }
    await expectAccessible(page(), 'the Audit log page with releases, devices and jobs');
    expect(owner.problems).toEqual([]);
  });

  it('tells a member who opens the address that the audit log is for owners only, with no link in the navigation', async () => {
    member = await openPage(browser, t.url);
    await member.page.goto(`/orgs/${t.orgId}/audit`);
    await member.page.waitForURL('**/login?next=*');
    await signIn(member.page, 'member@example.test', MEMBER_PASSWORD);
    await member.page.waitForURL(`**/orgs/${t.orgId}/audit`);
    await member.page.getByText(/Owners only/).waitFor();
    expect(await member.page.getByRole('table').count()).toBe(0);
    const nav = member.page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Jobs' }).waitFor();
    expect(await nav.getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    await expectAccessible(member.page, "a member's Audit log page");
    expect(member.problems).toEqual([]);
  });
});

describe('the words of the Audit log page', () => {
  it('say every action the coordinator records, all offered by its action filter', () => {
    expect(Object.keys(ACTION_WORDS).sort()).toEqual([...AUDIT_ACTIONS].sort());
  });

  it('say every kind of target an entry can name', () => {
    expect(Object.keys(TARGET_WORDS).sort()).toEqual([...AUDIT_TARGET_TYPES].sort());
  });

  it('match the actions docs/management.md lists', () => {
    const docs = fs.readFileSync(new URL('../../docs/management.md', import.meta.url), 'utf8');
    const section = docs.slice(docs.indexOf('\n## Audit log'));
    for (const action of AUDIT_ACTIONS) expect(section, action).toContain(`\`${action}\``);
  });
});
