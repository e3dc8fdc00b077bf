import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import { cumulativeWaveSizes } from '../../coordinator/src/domain/ota/rollout-rules.js';
import { CANARY, CANARY_FIELDS, planOf, previewOf, waveSizes } from '../../dashboard/src/components/rollout-plan.js';
import { OTA_REFRESH_MS } from '../../dashboard/src/api/refresh.js';
import { percentWords } from '@drover/shared';
import { enrollTestAgent, type TestAgent } from '../helpers/agent.js';
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
import { finishBody } from '../helpers/jobs.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';
import {
  artifactUploader,
  bindDevices,
  createApp,
  createRelease,
  uploadArtifact,
  type AppBody,
  type BindingBody,
  type ReleaseBody,
} from '../helpers/ota.js';

/**
 * Staged rollouts on an application's page in a real Chromium against a real coordinator
 * (docs/dashboard.md, "Updates (OTA)"): the publish dialog's plan (a custom plan refused at its
 * fields, the canary preset and its preview), the rollout panel live (a pause by the failure
 * threshold, said in words), the operator's moves through its buttons (pause, resume, advance and
 * abort, the last two after a confirmation) and a 409 when the rollout moved meanwhile. The four
 * devices are agents enrolled through the API with no daemon: their update jobs stay pending
 * unless the test moves one as its agent would (accept, start, finish failed).
 */

describe('the publish dialog’s plan (dashboard/src/components/rollout-plan.ts)', () => {
  it('counts the devices of each wave as the coordinator does', () => {
    for (const devices of [0, 1, 3, 4, 7, 10, 99, 100, 101, 1000, 1001]) {
      for (const waves of [[100], [1, 10, 100], [5, 25, 50, 100], [33.3, 66.6, 100], [0.1, 99.9, 100]]) {
        expect(waveSizes(waves, devices), `${waves} of ${devices}`).toEqual(cumulativeWaveSizes(waves, devices));
      }
    }
  });

  it('reads the custom fields into the API’s plan; fields that hold no number are named', () => {
    expect(planOf(CANARY_FIELDS)).toEqual({ plan: CANARY });
    expect(
      planOf({ waves: '5%, 25 50;100', soak: '0.5', soakUnit: 'minutes', maxFailureRate: '2.5', minAttempts: '3' }),
    ).toEqual({ plan: { waves: [5, 25, 50, 100], soakSeconds: 30, maxFailureRate: 0.025, minAttempts: 3 } });
    expect(planOf({ ...CANARY_FIELDS, soak: '90', soakUnit: 'seconds' })).toMatchObject({ plan: { soakSeconds: 90 } });
    // Percentages with their sign, as the preview and the rollout panel write them.
    expect(planOf({ ...CANARY_FIELDS, waves: '5 %, 25 % 100%', maxFailureRate: ' 5 % ' })).toMatchObject({
      plan: { waves: [5, 25, 100], maxFailureRate: 0.05 },
    });
    expect(planOf({ ...CANARY_FIELDS, waves: '5, %', maxFailureRate: '%' })).toMatchObject({ problems: [{}, {}] });
    // However small a rate, it is kept and shown as typed (it was rounded to 0).
    const tiny = planOf({ ...CANARY_FIELDS, maxFailureRate: '0.0000001' });
    expect(tiny).toMatchObject({ plan: { maxFailureRate: 1e-9 } });
    expect(planOf({ ...CANARY_FIELDS, maxFailureRate: '1.1' })).toMatchObject({ plan: { maxFailureRate: 0.011 } });
    expect('plan' in tiny && percentWords(tiny.plan.maxFailureRate)).toBe('0.0000001 %');
    expect([1 / 3, 0.3334, 1, 0].map(percentWords)).toEqual(['33.33 %', '33.34 %', '100 %', '0 %']);
    // Decimal numbers only, as a number input takes them: 0x10 is refused, not read as 16.
    expect(planOf({ ...CANARY_FIELDS, waves: '1e1, 100', soak: '.5' })).toMatchObject({
      plan: { waves: [10, 100], soakSeconds: 30 },
    });
    const hex = planOf({
      waves: '5, 0x10, 100',
      soak: '0x10',
      soakUnit: 'minutes',
      maxFailureRate: '0b1',
      minAttempts: '0o7',
    });
    expect('problems' in hex && hex.problems.length).toBe(4);
    const refused = planOf({ waves: 'ten, 100', soak: '', soakUnit: 'minutes', maxFailureRate: 'x', minAttempts: '' });
    expect('problems' in refused && refused.problems.map((p) => p.path)).toEqual([
      'body.rollout.waves',
      'body.rollout.soakSeconds',
      'body.rollout.maxFailureRate',
      'body.rollout.minAttempts',
    ]);
  });

  it('previews the waves for the devices on the channel now', () => {
    expect(previewOf([1, 10, 100], 4, 'stable')).toBe(
      'Of the 4 devices on channel stable now: wave 1 (1 %): 1 device, wave 2 (10 %): 1 (no new device), ' +
        'wave 3 (100 %): 4; each wave counts the devices of the waves before it.',
    );
    expect(previewOf([50, 100], 0, 'beta')).toMatch(/^No device is on channel beta now/);
    // Waves the API refuses get its words, not a preview.
    expect(previewOf([50, 10], 4, 'stable')).toBeNull();
  });
});

describe.skipIf(!CHROMIUM)('staged rollouts on the application page in a browser', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let app: AppBody;
  let draft: ReleaseBody;
  const agents = new Map<string, TestAgent>();

  beforeAll(async () => {
    t = await startTestCoordinator();
    for (const name of ['dev-1', 'dev-2', 'dev-3', 'dev-4']) {
      const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: name });
      agents.set(agent.agentId, agent);
    }
    app = await createApp(t.owner, t.orgId, { slug: 'gateway' });
    await bindDevices(t.owner, t.orgId, app.id, [...agents.keys()]);
    const fileId = await uploadArtifact(await artifactUploader(t), 'gateway 2.0.0', 'gateway-2.0.0.tar.gz');
    draft = await createRelease(t.owner, t.orgId, app.id, { version: '2.0.0', artifactFileId: fileId });
    browser = await launchBrowser();
    // Its refreshes come when a test moves its clock (the rollout panel follows the rollout).
    owner = await openPage(browser, t.url, { clock: true });
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
    await owner.page.goto(`/orgs/${t.orgId}/apps/${app.id}`);
    await owner.page.getByRole('heading', { name: 'gateway', level: 1 }).waitFor();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page]);

  const page = (): Page => owner.page;
  const rolloutPath = () => `/orgs/${t.orgId}/apps/${app.id}/releases/${draft.id}/rollout`;
  const dialog = () => page().getByRole('group', { name: 'Publish 2.0.0' });
  const panel = () => page().getByRole('region', { name: /^Rollout of 2\.0\.0/ });
  const state = () => panel().getByRole('status');
  const wave = (n: number) =>
    panel()
      .getByRole('listitem')
      .filter({ hasText: new RegExp(`^Wave ${n}: `) });
  const history = () => panel().getByRole('list', { name: 'History' }).getByRole('listitem');
  const button = (words: string) => page().getByRole('button', { name: `${words} the rollout of 2.0.0`, exact: true });
  async function devices(): Promise<BindingBody[]> {
    return (await t.owner.get<BindingBody[]>(`/orgs/${t.orgId}/apps/${app.id}/devices`)).body;
  }
  /** The Desired cells of the devices table that name no release, sorted. */
  async function desiredNone(): Promise<string[]> {
    const cells = await page().getByRole('region', { name: 'Devices' }).locator('td.desired').allInnerTexts();
    return cells.filter((c) => c.startsWith('none')).sort();
  }
  /** The rollout's state as the panel says it, at its next read (the page's clock moved on). */
  async function stateIs(pattern: RegExp) {
    await page().clock.runFor(OTA_REFRESH_MS);
    await waitFor(async () => expect(await state().innerText()).toMatch(pattern));
  }

  it('refuses a custom plan at its fields, previews the canary plan, and publishes with it: the rollout panel opens, live', async () => {
    await page().getByRole('button', { name: 'Publish 2.0.0' }).click();
    // All at once, as before plans: what the publish does to the devices.
    expect(await dialog().innerText()).toContain('4 devices on channel stable will be told to update to 2.0.0.');
    expect(await page().getByLabel('All at once').isChecked()).toBe(true);

    await dialog().getByLabel('Custom').check();
    expect(await page().getByLabel('Waves (%)').inputValue()).toBe('1, 10, 100');
    // A field that holds no number is said at once, without asking the coordinator (0x10 is no
    // wave of 16 %).
    await page().getByLabel('Waves (%)').fill('5, 0x10, 100');
    await dialog().getByRole('button', { name: 'Publish 2.0.0' }).click();
    await waitFor(async () =>
      expect(await page().locator('#plan-waves-error').innerText()).toContain(
        'expected percentages separated by commas',
      ),
    );
    // The coordinator's 422, each detail at its field, the wave named.
    await page().getByLabel('Waves (%)').fill('50, 10');
    await page().getByLabel('Max failure rate (%)').fill('150');
    await dialog().getByRole('button', { name: 'Publish 2.0.0' }).click();
    await waitFor(async () =>
      expect(await page().locator('#plan-waves-error').innerText()).toBe(
        'wave 2: expected waves in increasing order, got 10 after 50; ' +
          'expected the last wave to be 100 (every device), got 10',
      ),
    );
    expect(await page().locator('#plan-maxFailureRate-error').innerText()).toContain(
      'expected a rate from 0 to 1, got 1.5',
    );
    expect(await page().getByLabel('Waves (%)').getAttribute('aria-invalid')).toBe('true');
    expect(await dialog().getByRole('alert').innerText()).toContain('Some fields need a change');
    expect((await t.owner.get<ReleaseBody>(`/orgs/${t.orgId}/apps/${app.id}/releases/${draft.id}`)).body.status).toBe(
      'draft',
    );
    await expectAccessible(page(), 'the publish dialog with a refused plan');
    await docScreenshot(page(), 'ota-publish-plan');

    await dialog().getByLabel('Canary 1% → 10% → 100%').check();
    const text = await dialog().innerText();
    expect(text).toContain('Wave 1 holds 1 of the 4 devices on channel stable: it is told to update to 2.0.0 first');
    expect(text).toContain(
      'Of the 4 devices on channel stable now: wave 1 (1 %): 1 device, wave 2 (10 %): 1 (no new device), wave 3 (100 %): 4',
    );
    await dialog().getByRole('button', { name: 'Publish 2.0.0' }).click();

    await panel().waitFor();
    await stateIs(/^Running, wave 1 of 3: waiting for 1 update of the wave to end\.$/);
    const rollout = (await t.owner.get(rolloutPath())).body;
    expect(rollout).toMatchObject({ status: 'running', soakSeconds: 600, maxFailureRate: 0.05, minAttempts: 1 });
    expect(rollout.waves.map((w: { percent: number; devices: number }) => [w.percent, w.devices])).toEqual([
      [1, 1],
      [10, 1],
      [100, 4],
    ]);
    expect(
      await page()
        .getByRole('row', { name: /^2\.0\.0 \(sequence/ })
        .innerText(),
    ).toContain('rollout running, wave 1 of 3');
    expect(await wave(1).getAttribute('aria-current')).toBe('step');
    expect(await wave(1).innerText()).toMatch(
      /current wave\s+1 device in all; 1 new[\s\S]*0 succeeded\s+0 failed\s+1 pending/,
    );
    expect(await wave(2).innerText()).toContain('no new device');
    expect(await wave(2).innerText()).toContain('not started');
    expect(await history().first().innerText()).toMatch(
      /owner@example\.test \(you\) started the rollout: 4 devices in waves of 1, 10, 100 %$/,
    );
    // Only the operator's moves that fit a running rollout.
    expect(await button('Resume').count()).toBe(0);
    for (const words of ['Pause', 'Advance', 'Abort']) await button(words).waitFor();
    // Wave 1's device only was told to update.
    expect((await devices()).filter((b) => b.desired?.releaseId === draft.id)).toHaveLength(1);
    // The others wait for the rollout: the channel has a release, it has not reached them (not "none published").
    const words = `2.0.0 (sequence ${draft.sequence})`;
    await waitFor(async () =>
      expect(await desiredNone()).toEqual(Array(3).fill(`none yet: waits for the rollout of ${words}`)),
    );
    await expectAccessible(page(), 'a running rollout');
  });

  it("pauses by itself when wave 1's update fails, and says why; resumed, wave 1 soaks", async () => {
    const [first] = (await devices()).filter((b) => b.desired?.releaseId === draft.id);
    const agent = agents.get(first!.agentId)!;
    const jobId = first!.activeJobId!;
    // Its agent takes the update job and fails it, as a daemon whose update workflow failed would.
    for (const [step, body] of [
      ['accept', undefined],
      ['start', undefined],
      ['finish', finishBody({ status: 'failed', exitCode: 1, errorMessage: 'the new build does not start' })],
    ] as const) {
      const moved = await agent.request('POST', `/v1/agent/jobs/${jobId}/${step}`, body);
      expect(moved.status, moved.text).toBe(200);
    }
    await stateIs(
      /^Paused: wave 1 crossed the failure threshold \(1 of 1 updates failed, 100 % > 5 %\)\. No new device gets the release until it is resumed/,
    );
    expect(await wave(1).innerText()).toMatch(/0 succeeded\s+1 failed\s+0 pending/);
    expect(await history().last().innerText()).toMatch(
      /Drover paused the rollout: wave 1: 1 of 1 updates failed \(100 % > 5 %\)$/,
    );
    expect(await button('Pause').count()).toBe(0);
    for (const words of ['Resume', 'Advance', 'Abort']) await button(words).waitFor();
    await expectAccessible(page(), 'a rollout paused by its failure threshold');
    await waitFor(async () =>
      expect(await desiredNone()).toEqual(
        Array(3).fill(`none yet: the rollout of 2.0.0 (sequence ${draft.sequence}) is paused`),
      ),
    );
    await docScreenshot(page(), 'ota-rollout');

    // Resumed, the wave's failure is accepted: every update of it ended, so it soaks.
    await button('Resume').click();
    await stateIs(/^Running, wave 1 of 3: every update of the wave ended; it soaks, next wave at .+\.$/);
    const { soakEndsAt } = (await t.owner.get(rolloutPath())).body;
    expect(await state().locator('time').getAttribute('datetime')).toBe(soakEndsAt);
    expect(await wave(1).innerText()).toContain('ended');
  });

  it("pauses and resumes by hand; a move the rollout no longer fits shows the coordinator's 409", async () => {
    await button('Pause').click();
    await stateIs(/^Paused by owner@example\.test \(you\): no new wave starts until it is resumed\.$/);
    expect((await t.owner.get(rolloutPath())).body).toMatchObject({ status: 'paused', pausedReason: 'operator' });

    // Another member resumes it while this page still shows it paused (its next read held back).
    let reached!: () => void;
    let hold!: () => void;
    const readHeld = new Promise<void>((resolve) => (reached = resolve));
    const held = new Promise<void>((resolve) => (hold = resolve));
    await page().route(`**/v1${rolloutPath()}`, async (route) => {
      if (route.request().method() === 'GET') {
        reached();
        await held;
      }
      await route.continue();
    });
    await page().clock.runFor(OTA_REFRESH_MS);
    await readHeld;
    expect((await t.owner.post(`${rolloutPath()}/resume`)).status).toBe(200);
    await button('Resume').click();
    await waitFor(async () =>
      expect(await panel().getByRole('alert').innerText()).toBe(
        'Cannot resume a rollout that is running; resume applies to a rollout that is paused',
      ),
    );
    hold();
    // The held reads go on to the coordinator before the route goes.
    await page().unrouteAll({ behavior: 'wait' });
    // Then the page shows the rollout as it is: running, with the moves that fit.
    await stateIs(/^Running, wave 1 of 3/);
    await button('Pause').waitFor();
    expect(await button('Resume').count()).toBe(0);
  });

  it('shows the rollout in progress on the home page, leading to its application', async () => {
    await page().goto(`/orgs/${t.orgId}`);
    const home = page().getByRole('region', { name: 'Rollouts in progress' });
    const link = home.getByRole('link', { name: 'gateway 2.0.0' });
    await link.waitFor();
    expect(await home.getByRole('listitem').innerText()).toMatch(
      /^gateway 2\.0\.0 running\nstable · wave 1 of 3 \(1 % of 4 devices\) · started .+ ago$/,
    );
    await link.click();
    await page().waitForURL(`**/orgs/${t.orgId}/apps/${app.id}`);
    await panel().waitFor(); // a live rollout's panel opens by itself
  });

  it('advances and aborts after a confirmation; the ended rollout is read no more', async () => {
    await button('Advance').click();
    const advance = page().getByRole('group', { name: 'Advance the rollout of 2.0.0' });
    expect(await advance.innerText()).toContain(
      "Wave 2 (10 %) starts without waiting for the end of wave 1's soak: it adds no device.",
    );
    await expectAccessible(page(), 'the advance confirmation');
    // With the wave the page shows: a second advance sent from wave 1 would be the API's 409.
    const sent = page().waitForRequest((q) => q.method() === 'POST' && q.url().endsWith(`/v1${rolloutPath()}/advance`));
    await advance.getByRole('button', { name: 'Start wave 2 now' }).click();
    expect((await sent).postDataJSON()).toEqual({ wave: 0 });
    await stateIs(/^Running, wave 2 of 3/);
    expect(await wave(2).getAttribute('aria-current')).toBe('step');
    expect(await wave(1).getAttribute('aria-current')).toBeNull();
    expect(await history().allInnerTexts()).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/owner@example\.test \(you\) started the next wave: wave 2 of 3$/),
      ]),
    );

    await button('Abort').click();
    const abort = page().getByRole('group', { name: 'Abort the rollout of 2.0.0' });
    expect(await abort.innerText()).toContain(
      'Aborting the rollout of 2.0.0: 3 devices not yet given it keep the previous release, and so do devices bound later; ' +
        'the 1 device of the waves so far keeps 2.0.0.',
    );
    await abort.getByRole('button', { name: 'Abort the rollout' }).click();
    await stateIs(/^Aborted: devices not yet given the release keep the previous one/);
    expect(await panel().getByRole('button').count()).toBe(0);
    expect(
      await page()
        .getByRole('row', { name: /^2\.0\.0 \(sequence/ })
        .innerText(),
    ).toContain('rollout aborted');
    expect((await devices()).filter((b) => b.desired?.releaseId === draft.id)).toHaveLength(1);
    await expectAccessible(page(), 'an aborted rollout');
    await waitFor(async () =>
      expect(await desiredNone()).toEqual(
        Array(3).fill(`none: the rollout of 2.0.0 (sequence ${draft.sequence}) was aborted`),
      ),
    );
    // Ended: the page reads the rollout no more, over five of its refreshes' intervals.
    const read = page().waitForRequest((r) => r.url().endsWith(`/v1${rolloutPath()}`), { timeout: 1_000 });
    await page().clock.runFor(5 * OTA_REFRESH_MS);
    await expect(read).rejects.toThrow(/Timeout/);

    // The panel stays until hidden, and comes back.
    await page().getByRole('button', { name: 'Hide rollout of 2.0.0' }).click();
    expect(await panel().count()).toBe(0);
    await page().getByRole('button', { name: 'Show rollout of 2.0.0' }).click();
    await stateIs(/^Aborted/);
  });

  it("publishes the next release all at once (no plan); an older release's rollout is read when asked for", async () => {
    const fileId = await uploadArtifact(await artifactUploader(t), 'gateway 2.1.0', 'gateway-2.1.0.tar.gz');
    const next = await createRelease(t.owner, t.orgId, app.id, { version: '2.1.0', artifactFileId: fileId });
    await page().getByRole('button', { name: 'Publish 2.1.0' }).click();
    const publish = page().getByRole('group', { name: 'Publish 2.1.0' });
    expect(await publish.innerText()).toContain('4 devices on channel stable will be told to update to 2.1.0.');
    await publish.getByRole('button', { name: 'Publish 2.1.0' }).click();
    const row = (version: string) => page().getByRole('row', { name: new RegExp(`^${version} \\(sequence`) });
    await waitFor(async () => expect(await row('2.1.0').innerText()).toContain('published'));
    expect((await t.owner.get(`/orgs/${t.orgId}/apps/${app.id}/releases/${next.id}/rollout`)).status).toBe(404);
    expect((await devices()).every((b) => b.desired?.releaseId === next.id)).toBe(true);

    // A fresh page asks only for the newest published release's rollout (2.1.0 has none).
    await page().reload();
    await row('2.1.0').waitFor();
    await page().getByRole('button', { name: 'Show rollout of 2.0.0' }).waitFor();
    // No badge: the page has not read 2.0.0's rollout, and 2.1.0 has none.
    expect(await row('2.0.0').locator('td').nth(1).innerText()).toBe('published');
    expect(await row('2.1.0').locator('td').nth(1).innerText()).toBe('published');
    expect(await page().getByRole('button', { name: 'Show rollout of 2.1.0' }).count()).toBe(0);
    await page().getByRole('button', { name: 'Show rollout of 2.0.0' }).click();
    await stateIs(/^Aborted/);
    expect(await row('2.0.0').innerText()).toContain('rollout aborted');
    expect(owner.problems).toEqual([]);
  });

  it("lets a viewer open an ended rollout's panel; what would change something stays disabled", async () => {
    await addUser(t.owner, t.orgId, 'viewer@example.test', 'viewer');
    const viewer = await openPage(browser, t.url);
    try {
      const p = viewer.page;
      await signIn(p, 'viewer@example.test', MEMBER_PASSWORD, t.orgId);
      await p.goto(`/orgs/${t.orgId}/apps/${app.id}`);
      const show = p.getByRole('button', { name: 'Show rollout of 2.0.0' });
      expect(await show.isEnabled()).toBe(true);
      await show.click();
      const ended = p.getByRole('region', { name: /^Rollout of 2\.0\.0/ }).getByRole('status');
      await waitFor(async () => expect(await ended.innerText()).toMatch(/^Aborted/), { timeout: 15_000 });
      expect(await p.getByRole('button', { name: 'Yank 2.1.0' }).isDisabled()).toBe(true);
      expect(
        await p
          .getByRole('button', { name: /^Change the channel of / })
          .first()
          .isDisabled(),
      ).toBe(true);
      expect(await p.getByRole('heading', { name: 'New release' }).count()).toBe(0);
      expect(viewer.problems).toEqual([]);
    } finally {
      await viewer.page.close();
    }
  });
});
