import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import { OTA_REFRESH_MS } from '../../dashboard/src/api/refresh.js';
import {
  enrollAgentStateDir,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import {
  CHROMIUM,
  docScreenshot,
  expectAccessible,
  launchBrowser,
  openPage,
  screenshotOnFailure,
  type TestPage,
} from '../helpers/browser.js';
import {
  makeTempDir,
  OWNER_EMAIL,
  OWNER_PASSWORD,
  startTestCoordinator,
  type TestCoordinator,
} from '../helpers/coordinator.js';
import { enrollTestAgent } from '../helpers/agent.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';
import { generateEd25519KeyPair, privateKeyFromBase64, signRotation, sortedKeys } from '@drover/shared';
import {
  artifactUploader,
  createApp,
  release,
  uploadArtifact,
  type AppBody,
  type BindingBody,
  type ReleaseBody,
} from '../helpers/ota.js';
import { installedVersion } from '../helpers/ota-agent.js';

/**
 * The Updates (OTA) pages in a real Chromium against a real coordinator and a real agent bound
 * to an application: create the application (a refusal shown at its field), bind the agent,
 * create a release from a file uploaded in the browser, publish it after a confirmation that
 * counts the devices, watch the device install it, publish a second release from a stored file,
 * yank it and watch the device go back; a member's view; delete. Every page is checked with
 * axe-core and for CSP violations.
 */

describe.skipIf(!CHROMIUM)('the Updates pages in a browser', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let member: TestPage | undefined;
  let daemon: DaemonProcess | undefined;
  let marks: string;
  let gate: string;
  let app: AppBody;

  beforeAll(async () => {
    t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500' } });
    const enrolled = await enrollAgentStateDir(t);
    marks = path.join(makeTempDir('drover-browser-ota-'), 'device');
    gate = path.join(path.dirname(marks), 'hold');
    fs.mkdirSync(marks);
    // The update workflow records what it installed; while the file `hold` exists it waits, so
    // the test can see an update job in progress.
    writeWorkflowFile(
      enrolled.stateDir,
      'apply-update',
      [
        'name: apply-update',
        'steps:',
        `  - run: while [ -f '${gate}' ]; do sleep 0.05; done; cp "$DROVER_PARAM_ARTIFACT" '${marks}/artifact' && printf %s "$DROVER_PARAM_VERSION" > '${marks}/version'`,
        '    shell: true',
        '',
      ].join('\n'),
    );
    daemon = startDaemonProcess(enrolled.stateDir, ['--deploy-poll-interval', '1s']);
    await daemon.waitForLog((r) => /^connected to the coordinator/.test(r.msg), 30_000);
    browser = await launchBrowser();
    // Its refreshes come when a test moves its clock (the devices table follows the device).
    owner = await openPage(browser, t.url, { clock: true });
    await owner.page.goto('/login');
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD);
    await owner.page.waitForURL(`**/orgs/${t.orgId}`);
  }, 60_000);
  afterAll(async () => {
    await stopDaemonProcess(daemon);
    await browser?.close();
    await t?.close();
    if (marks) fs.rmSync(path.dirname(marks), { recursive: true, force: true });
  });
  screenshotOnFailure(() => [owner?.page, member?.page]);

  const page = (): Page => owner.page;
  async function signIn(p: Page, email: string, password: string) {
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  }
  const deviceRow = () => page().getByRole('row', { name: 'daemon-test' });
  const releaseRow = (version: string) => page().getByRole('row', { name: new RegExp(`^${version} \\(sequence`) });
  async function releases(): Promise<ReleaseBody[]> {
    return (await t.owner.get<ReleaseBody[]>(`/orgs/${t.orgId}/apps/${app.id}/releases`)).body;
  }
  async function binding(): Promise<BindingBody> {
    const devices = await t.owner.get<BindingBody[]>(`/orgs/${t.orgId}/apps/${app.id}/devices`);
    return devices.body[0]!;
  }
  /**
   * Waits until the page shows the device on `version`, installed, and checks the device really has
   * it: once the coordinator knows, at the page's next refresh (its clock moved on).
   */
  async function converged(version: string) {
    await waitFor(async () => expect(await binding()).toMatchObject({ current: { version }, activeJobId: null }), {
      timeout: 30_000,
      interval: 200,
    });
    await page().clock.runFor(OTA_REFRESH_MS);
    await waitFor(
      async () => {
        expect(await deviceRow().locator('td.current').innerText()).toMatch(new RegExp(`^${version} \\(sequence`));
        expect(await deviceRow().innerText()).toContain('installed');
        expect(await deviceRow().innerText()).not.toContain('in progress');
      },
      { timeout: 30_000, interval: 200 },
    );
    expect(installedVersion(marks)).toBe(version);
  }

  it('lists no application yet, from the navigation', async () => {
    await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Updates' }).click();
    await page().getByRole('heading', { name: 'Updates', level: 1 }).waitFor();
    await page().getByText('No application yet.').waitFor();
    await expectAccessible(page(), 'the empty Updates page');
  });

  it('creates an application: a refused slug is shown at its field, then fixed', async () => {
    await page().getByLabel('Slug').fill('Kiosk!');
    await page().getByLabel('Update workflow').fill('apply-update');
    await page().getByRole('button', { name: 'Create application' }).click();
    const slugError = page().locator('#app-slug-error');
    await slugError.waitFor();
    expect(await page().getByLabel('Slug').getAttribute('aria-invalid')).toBe('true');
    expect(await page().getByRole('alert').innerText()).toContain('Some fields need a change');
    await expectAccessible(page(), 'the application form with an error');

    await page().getByLabel('Slug').fill('kiosk');
    await page().getByRole('button', { name: 'Create application' }).click();
    await page().getByRole('row', { name: 'kiosk' }).waitFor();
    const apps = await t.owner.get<AppBody[]>(`/orgs/${t.orgId}/apps`);
    expect(apps.body).toMatchObject([{ slug: 'kiosk', updateWorkflowName: 'apply-update', defaultChannel: 'stable' }]);
    app = apps.body[0]!;

    // The same slug again: the API's 409 in plain words above the form.
    await page().getByLabel('Slug').fill('kiosk');
    await page().getByLabel('Update workflow').fill('apply-update');
    await page().getByRole('button', { name: 'Create application' }).click();
    await waitFor(async () => expect(await page().getByRole('alert').innerText()).toMatch(/kiosk/));
    await docScreenshot(page(), 'ota-apps');
  });

  it("binds the agent on the application's page; the device reports its baseline", async () => {
    await page().getByRole('link', { name: 'kiosk' }).click();
    await page().getByRole('heading', { name: 'kiosk', level: 1 }).waitFor();
    await page().getByText('No release yet.').waitFor();
    await page().getByLabel('daemon-test').check();
    await page().getByRole('button', { name: 'Bind 1 agent' }).click();
    await waitFor(
      async () => {
        const row = await deviceRow().innerText();
        expect(row).toContain('stable');
        expect(row).toContain('idle');
        expect(row).toContain('none published');
      },
      { timeout: 20_000, interval: 200 },
    );
    await expectAccessible(page(), "an application's page with a device and no release");
  });

  it('creates a release from a file uploaded in the browser, publishes it after a confirmation, and the device installs it', async () => {
    await page().getByLabel('Version').fill('1.0.0');
    // Creating the release before uploading its artifact is refused at the artifact.
    await page().getByRole('button', { name: 'Create release' }).click();
    await page().locator('#rel-artifactFileId-error').waitFor();
    expect(await page().locator('#rel-artifactFileId-error').innerText()).toContain('upload the file first');
    // The artifact goes up with the dashboard's file upload (progress, cancel), then is chosen.
    const upload = page().getByRole('group', { name: 'Upload the artifact' });
    await upload
      .getByLabel('File to upload')
      .setInputFiles({ name: 'kiosk-1.0.0.tar.gz', mimeType: 'application/gzip', buffer: Buffer.from('kiosk 1.0.0') });
    await upload.getByRole('button', { name: 'Upload', exact: true }).click();
    const stored = page().getByLabel('Stored file', { exact: true });
    await waitFor(async () => expect(await stored.locator('option:checked').innerText()).toMatch(/^kiosk-1\.0\.0/));
    // A channel the coordinator refuses: the file is stored already, and the form keeps it.
    await page().locator('#rel-channel').fill('Stable!');
    await page().getByRole('button', { name: 'Create release' }).click();
    await page().locator('#rel-channel-error').waitFor();
    expect(await page().locator('#rel-channel').getAttribute('aria-invalid')).toBe('true');
    await waitFor(async () => expect(await stored.locator('option:checked').innerText()).toMatch(/^kiosk-1\.0\.0/));
    await expectAccessible(page(), 'the release form with an error');
    await docScreenshot(page(), 'ota-release-form');
    await page().locator('#rel-channel').fill('');
    await page().getByRole('button', { name: 'Create release' }).click();
    await releaseRow('1.0.0').waitFor();
    const [created] = await releases();
    expect(created).toMatchObject({ version: '1.0.0', status: 'draft', sequence: 1, size: 11, channel: 'stable' });
    expect(await releaseRow('1.0.0').innerText()).toContain(`sha256 ${created!.checksumSha256.slice(0, 12)}`);

    await page().getByRole('button', { name: 'Publish 1.0.0' }).click();
    const confirm = page().getByRole('group', { name: 'Publish 1.0.0' });
    expect(await confirm.innerText()).toContain('1 device on channel stable will be told to update to 1.0.0.');
    await expectAccessible(page(), 'the publish confirmation');
    fs.writeFileSync(gate, '');
    await confirm.getByRole('button', { name: 'Publish 1.0.0' }).click();
    await waitFor(async () => expect(await releaseRow('1.0.0').innerText()).toContain('published'), {
      timeout: 10_000,
    });

    // While the device installs, its row links the update job and the release counts it as updating.
    const job = deviceRow().getByRole('link', { name: 'in progress' });
    await job.waitFor({ timeout: 20_000 });
    const { activeJobId } = await binding();
    expect(await job.getAttribute('href')).toBe(`/api/jobs/${activeJobId}`);
    const { number } = (await t.owner.get<{ number: number }>(`/jobs/${activeJobId}`)).body;
    await waitFor(async () => expect(await job.innerText()).toBe(`#${number} in progress`));
    expect(await releaseRow('1.0.0').locator('td.counts').innerText()).toMatch(/0 on it\s+1 updating\s+0 failed/);
    await expectAccessible(page(), "an application's page with an update in progress");
    await job.click();
    await page()
      .getByRole('heading', { name: /apply-update/ })
      .waitFor();
    // The update job's page says what it is: the release it installs, of its application, on its agent.
    const facts = page().locator('dl.facts');
    await facts.getByRole('link', { name: 'kiosk' }).waitFor();
    expect(await facts.getByRole('link', { name: 'kiosk' }).getAttribute('href')).toBe(
      `/orgs/${t.orgId}/apps/${app.id}`,
    );
    expect(await facts.innerText()).toMatch(/Update\s+installs release 1\.0\.0 \(channel stable\) of kiosk/);
    await facts.getByRole('link', { name: 'daemon-test' }).waitFor();
    await page().goBack();
    await page().getByRole('heading', { name: 'kiosk', level: 1 }).waitFor();
    fs.rmSync(gate);
    await converged('1.0.0');
    expect(fs.readFileSync(path.join(marks, 'artifact'), 'utf8')).toBe('kiosk 1.0.0');
    expect(await releaseRow('1.0.0').locator('td.counts').innerText()).toMatch(/1 on it\s+0 updating\s+0 failed/);
  });

  it('publishes a second release from a stored file, then yanks it: the confirmation counts the device, which goes back', async () => {
    const uploader = await artifactUploader(t);
    const fileId = await uploadArtifact(uploader, 'kiosk 1.1.0', 'kiosk-1.1.0.tar.gz');
    await page().getByLabel('Version').fill('1.1.0');
    await page().getByLabel('Use a stored file').check();
    await page().getByLabel('Stored file', { exact: true }).selectOption({ value: fileId });
    await page().getByRole('button', { name: 'Create release' }).click();
    await releaseRow('1.1.0').waitFor();
    expect((await releases())[0]).toMatchObject({ version: '1.1.0', artifactFileId: fileId, sequence: 2 });

    await page().getByRole('button', { name: 'Publish 1.1.0' }).click();
    const publish = page().getByRole('group', { name: 'Publish 1.1.0' });
    expect(await publish.innerText()).toContain('1 device on channel stable will be told to update to 1.1.0.');
    await publish.getByRole('button', { name: 'Publish 1.1.0' }).click();
    await converged('1.1.0');
    await docScreenshot(page(), 'ota-app');

    await page().getByRole('button', { name: 'Yank 1.1.0' }).click();
    const yank = page().getByRole('group', { name: 'Yank 1.1.0' });
    expect(await yank.innerText()).toContain('Yanking 1.1.0: 1 device on it will be moved back to 1.0.0.');
    await expectAccessible(page(), 'the yank confirmation');
    await docScreenshot(page(), 'ota-yank');
    await yank.getByRole('button', { name: 'Yank 1.1.0' }).click();
    await waitFor(async () => expect(await releaseRow('1.1.0').innerText()).toContain('yanked'), {
      timeout: 10_000,
    });
    await converged('1.0.0');
    expect(await binding()).toMatchObject({ current: { version: '1.0.0' }, forced: false, activeJobId: null });
    await expectAccessible(page(), "an application's page after a yank");
  });

  it('sets a maintenance window: the editor shows the next windows as one types; an optional update waits for it', async () => {
    const section = page().getByRole('region', { name: 'Maintenance window' });
    expect(await section.innerText()).toContain('None: updates start as soon as a release is published.');
    await section.getByRole('button', { name: 'Set a maintenance window' }).click();
    // A duration the browser cannot read as a number, or none, is refused at its field: neither is sent as 0.
    const duration = section.getByLabel('Duration (minutes)');
    const durationError = section.locator('#win-durationMinutes-error');
    await duration.fill('');
    await duration.pressSequentially('1e');
    await section.getByRole('button', { name: 'Save window' }).click();
    await waitFor(async () => expect(await durationError.innerText()).toBe('must be a number, such as 120'));
    await duration.fill('');
    await section.getByRole('button', { name: 'Save window' }).click();
    await waitFor(async () => expect(await durationError.innerText()).toBe('is required'));
    expect(await duration.getAttribute('aria-invalid')).toBe('true');
    expect((await t.owner.get<AppBody>(`/orgs/${t.orgId}/apps/${app.id}`)).body.maintenanceWindow).toBeNull();
    // A window that opens 12 hours from now in Berlin: closed now, whenever the test runs.
    const berlinHour = Number(
      new Intl.DateTimeFormat('en-US', { timeZone: 'Europe/Berlin', hourCycle: 'h23', hour: 'numeric' }).format(
        Date.now(),
      ),
    );
    const hour = (berlinHour + 12) % 24;
    await section.getByLabel('Cron expression').fill(`15 ${hour} * * *`);
    await section.getByLabel('Time zone').fill('Mars/Olympus');
    await section.getByLabel('Duration (minutes)').fill('45');
    // The coordinator's refusal of the zone, at its field, before anything is saved.
    const zoneError = section.locator('#win-timezone-error');
    await zoneError.waitFor();
    expect(await zoneError.innerText()).toMatch(/IANA time zone/);
    expect(await section.getByLabel('Time zone').getAttribute('aria-invalid')).toBe('true');
    await section.getByLabel('Time zone').fill('Europe/Berlin');
    const preview = section.getByRole('list', { name: 'Next windows (preview)' });
    const local = `${String(hour).padStart(2, '0')}:15 Europe/Berlin`;
    await waitFor(async () => {
      expect(await preview.getByRole('listitem').count()).toBe(3);
      for (const item of await preview.getByRole('listitem').allInnerTexts()) expect(item).toContain(local);
    });
    // As the expression changes, so do the windows shown (nothing saved yet).
    await section.getByLabel('Cron expression').fill(`45 ${hour} * * *`);
    await waitFor(async () => expect(await preview.innerText()).toContain(`${String(hour).padStart(2, '0')}:45`));
    expect((await t.owner.get<AppBody>(`/orgs/${t.orgId}/apps/${app.id}`)).body.maintenanceWindow).toBeNull();
    await expectAccessible(page(), 'the maintenance window editor');
    await section.getByRole('button', { name: 'Save window' }).click();
    await section.getByRole('list', { name: 'Next windows', exact: true }).waitFor();
    expect((await t.owner.get<AppBody>(`/orgs/${t.orgId}/apps/${app.id}`)).body.maintenanceWindow).toEqual({
      cron: `45 ${hour} * * *`,
      timezone: 'Europe/Berlin',
      durationMinutes: 45,
    });
    expect(await section.innerText()).toContain('stays open 45 minutes');

    // An optional release: the device waits for the window, and its row says when it opens.
    const uploader = await artifactUploader(t);
    const artifactFileId = await uploadArtifact(uploader, 'kiosk 1.2.0', 'kiosk-1.2.0.tar.gz');
    await release(t.owner, t.orgId, app.id, { version: '1.2.0', artifactFileId });
    await waitFor(async () => expect(await binding()).toMatchObject({ waitingForWindow: true }), {
      timeout: 20_000,
      interval: 200,
    });
    await page().clock.runFor(OTA_REFRESH_MS);
    await waitFor(async () => expect(await deviceRow().innerText()).toMatch(/waits for window \(opens .+\)/));
    const waiting = await binding();
    expect(waiting).toMatchObject({ waitingForWindow: true, activeJobId: null });
    expect(await deviceRow().locator('time').last().getAttribute('datetime')).toBe(waiting.nextWindowAt);
    await expectAccessible(page(), "an application's page with a device waiting for its window");
    await docScreenshot(page(), 'ota-maintenance-window');

    // Removed after a confirmation: the held update starts at once.
    await section.getByRole('button', { name: 'Remove window' }).click();
    const confirm = section.getByRole('group', { name: 'Remove the maintenance window' });
    await confirm.getByRole('button', { name: 'Remove window' }).click();
    await converged('1.2.0');
    expect(await section.innerText()).toContain('None: updates start');
  });

  it("changes the device's channel: a refused channel is shown at its input", async () => {
    await deviceRow().getByRole('button', { name: 'Change the channel of daemon-test' }).click();
    await page().getByLabel('Channel of daemon-test').fill('Beta!');
    await page().getByRole('button', { name: 'Save' }).click();
    await page().locator('[id^="dev-"][id$="-channel-error"]').waitFor();
    await page().getByLabel('Channel of daemon-test').fill('beta');
    await page().getByRole('button', { name: 'Save' }).click();
    await waitFor(async () => expect(await deviceRow().innerText()).toContain('beta'));
    expect((await binding()).channel).toBe('beta');
    // Nothing is published on beta: the device keeps 1.0.0 and has nothing to install.
    await waitFor(async () => expect(await deviceRow().locator('td.desired').innerText()).toBe('none published'));
  });

  it('groups devices by a label selector: a live preview, a refusal where it is, the origin of each binding', async () => {
    for (const name of ['kiosk-a', 'kiosk-b', 'gateway-a']) {
      const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: name });
      const res = await t.owner.patch(`/orgs/${t.orgId}/agents/${agent.agentId}`, {
        body: { labels: { role: name.split('-')[0]! } },
      });
      expect(res.status).toBe(200);
    }
    await page().reload();
    const group = page().getByRole('form', { name: 'Device group' });
    await group.getByText('No device group: devices are bound by hand only.').waitFor();
    const input = group.getByLabel('Device selector');
    const preview = group.getByRole('status').filter({ hasText: 'Applying it binds' });
    const save = group.getByRole('button', { name: 'Apply device group' });
    // kiosk-a ticked to bind by hand, then bound by the group below: the form no longer sends it.
    const bindForm = page().getByRole('form', { name: 'Bind agents' });
    // Found by name among many (case aside) on the coordinator: the list narrows, what is chosen
    // stays chosen and in sight, first; the agent bound already (daemon-test) is not offered.
    const find = bindForm.getByLabel('Find agents by name');
    await bindForm.getByLabel('gateway-a', { exact: true }).check();
    expect(await bindForm.getByLabel('daemon-test', { exact: true }).count()).toBe(0);
    await find.fill('KIOSK');
    await waitFor(async () => expect(await bindForm.getByRole('checkbox').count()).toBe(3));
    expect(await bindForm.getByRole('checkbox').first().isChecked()).toBe(true);
    expect(await bindForm.getByLabel('gateway-a', { exact: true }).isChecked()).toBe(true);
    await find.fill('nothing like it');
    await bindForm.getByText('No agent has “nothing like it” in its name or hostname.').waitFor();
    await find.fill('daemon');
    await bindForm.getByText('Each of these agents is bound to this application already, or revoked.').waitFor();
    await find.fill('');
    await bindForm.getByLabel('gateway-a', { exact: true }).uncheck();
    await bindForm.getByLabel('kiosk-a', { exact: true }).check();
    await bindForm.getByRole('button', { name: 'Bind 1 agent' }).waitFor();

    // What does not parse is said where it is, before anything is sent.
    await input.fill('role in kiosk');
    await group.getByText("Not a label selector: at position 8: expected '(', found 'kiosk'").waitFor();
    expect(await input.getAttribute('aria-invalid')).toBe('true');
    expect(await save.isDisabled()).toBe(true);
    await expectAccessible(page(), 'the device group form with a selector that does not parse');

    await input.fill('role=kiosk');
    await waitFor(async () =>
      expect(await preview.innerText()).toBe('2 agents match now: kiosk-a and kiosk-b. Applying it binds 2 agents.'),
    );
    await save.click();
    await group.getByText('role=kiosk matches 2 agents; 2 bound, 0 removed.').waitFor();
    for (const name of ['kiosk-a', 'kiosk-b']) {
      const row = page().getByRole('row', { name });
      await waitFor(async () => expect(await row.locator('td.origin').innerText()).toBe('selector'));
      // A binding the selector made goes when its agent stops matching: no Unbind.
      expect(await row.getByRole('button', { name: `Unbind ${name}` }).count()).toBe(0);
    }
    expect(await deviceRow().locator('td.origin').innerText()).toBe('manual');
    expect(await page().getByRole('row', { name: 'gateway-a' }).count()).toBe(0);
    // It left the list, and what the form would send with it: before, `Bind 1 agent` sent it, refused as bound.
    await waitFor(async () => expect(await bindForm.getByLabel('kiosk-a', { exact: true }).count()).toBe(0));
    const bindButton = bindForm.getByRole('button', { name: /^Bind \d+ agents?$/ });
    expect(await bindButton.innerText()).toBe('Bind 0 agents');
    expect(await bindButton.isDisabled()).toBe(true);
    expect((await t.owner.get<AppBody>(`/orgs/${t.orgId}/apps/${app.id}`)).body.deviceSelector).toBe('role=kiosk');
    await expectAccessible(page(), "an application's page with a device group");
    await docScreenshot(page(), 'ota-device-group');

    // A selector that matches nothing says so, and removes what the group bound.
    await input.fill('role=printer');
    await waitFor(async () =>
      expect(await preview.innerText()).toBe(
        'No agent matches now: the selector binds nothing until one does. Applying it binds 0 agents and removes 2 bindings it made.',
      ),
    );
    await save.click();
    await group.getByText('role=printer matches no agent: nothing is bound; 0 bound, 2 removed.').waitFor();
    await waitFor(async () => expect(await page().getByRole('row', { name: 'kiosk-a' }).count()).toBe(0));
    // Unbound, it is back in the list, not ticked.
    expect(await bindForm.getByLabel('kiosk-a', { exact: true }).isChecked()).toBe(false);

    await group.getByRole('button', { name: 'Remove device group' }).click();
    // Asked first: one click would unbind the devices the group made.
    const confirm = group.getByRole('group', { name: 'Remove the device group' });
    await confirm.getByText('Remove the device group? The 0 bindings it made go').waitFor();
    expect((await t.owner.get<AppBody>(`/orgs/${t.orgId}/apps/${app.id}`)).body.deviceSelector).toBe('role=printer');
    await confirm.getByRole('button', { name: 'Remove device group' }).click();
    await group.getByText('Device group removed: 0 bindings it made removed.').waitFor();
    await group.getByText('No device group: devices are bound by hand only.').waitFor();
    expect((await t.owner.get<BindingBody[]>(`/orgs/${t.orgId}/apps/${app.id}/devices`)).body).toMatchObject([
      { origin: 'manual' },
    ]);
  });

  it('hides the owner-only delete from a member, who may still bind and publish', async () => {
    await addUser(t.owner, t.orgId, 'member@example.test', 'member');
    member = await openPage(browser, t.url);
    await member.page.goto(`/orgs/${t.orgId}/apps`);
    await member.page.waitForURL('**/login?next=*');
    await signIn(member.page, 'member@example.test', MEMBER_PASSWORD);
    await member.page.getByRole('row', { name: 'kiosk' }).waitFor();
    await member.page.getByRole('button', { name: 'Edit kiosk' }).waitFor();
    expect(await member.page.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    await expectAccessible(member.page, "a member's Updates page");
    await member.page.getByRole('link', { name: 'kiosk' }).click();
    await member.page.getByRole('heading', { name: 'kiosk', level: 1 }).waitFor();
    await member.page.getByRole('button', { name: 'Create release' }).waitFor();
    expect(await member.page.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    expect(member.problems).toEqual([]);
  });

  it('lets an owner edit an application and delete it after confirming', async () => {
    await page().goto(`/orgs/${t.orgId}/apps`);
    await page().getByRole('button', { name: 'Edit kiosk' }).click();
    await page().getByLabel('Default channel of kiosk').fill('beta');
    await page().getByRole('button', { name: 'Save' }).click();
    await waitFor(async () => expect(await page().getByRole('row', { name: 'kiosk' }).innerText()).toContain('beta'));

    await page().getByRole('button', { name: 'Delete kiosk' }).click();
    const confirm = page().getByRole('group', { name: 'Delete kiosk' });
    expect(await confirm.innerText()).toContain('Its releases and device bindings are deleted');
    await confirm.getByRole('button', { name: 'Delete application' }).click();
    await page().getByText('No application yet.').waitFor();
    expect((await t.owner.get(`/orgs/${t.orgId}/apps/${app.id}`)).status).toBe(404);
    expect(owner.problems).toEqual([]);
  });

  it("sets an application's release keys on its page, then rotates them with a pasted statement", async () => {
    const signed = await createApp(t.owner, t.orgId, { slug: 'signed' });
    const k1 = generateEd25519KeyPair();
    const k2 = generateEd25519KeyPair();
    await page().goto(`/orgs/${t.orgId}/apps/${signed.id}`);
    const section = page().getByRole('region', { name: 'Release keys' });
    expect(await section.innerText()).toContain('None: releases are not signed.');
    expect(await page().getByLabel('Signature').count()).toBe(0); // no key: releases are created unsigned
    await section.getByRole('button', { name: 'Set release keys' }).click();
    const keysField = section.getByLabel('Public keys, one per line');
    await keysField.fill('not a key');
    await section.getByRole('button', { name: 'Save keys' }).click();
    await section.locator('#keys-releaseKeys-error').waitFor();
    expect(await keysField.getAttribute('aria-invalid')).toBe('true');
    await keysField.fill(`${k1.publicKey}\n`);
    await section.getByRole('button', { name: 'Save keys' }).click();
    const listed = section.getByRole('list', { name: 'Release keys' });
    await waitFor(async () => expect(await listed.innerText()).toBe(k1.publicKey));
    expect((await t.owner.get<AppBody>(`/orgs/${t.orgId}/apps/${signed.id}`)).body).toMatchObject({
      releaseKeys: [k1.publicKey],
      releaseKeyGeneration: 0,
    });
    // A release of it is created with its sequence and signature.
    await page().getByLabel('Sequence').waitFor();
    await page().getByLabel('Signature').waitFor();
    // A sequence the browser cannot read ("1e": the input's value is empty) is refused at its
    // field, not left out for the API to refuse as missing.
    await page().getByLabel('Sequence').pressSequentially('1e');
    await page().getByRole('button', { name: 'Create release' }).click();
    await page().getByRole('form', { name: 'New release' }).getByRole('alert').waitFor();
    expect(await page().getByLabel('Sequence').getAttribute('aria-invalid')).toBe('true');
    expect(await page().locator('#rel-sequence-error').innerText()).toBe('must be a number, such as 30');
    await page().getByLabel('Sequence').fill('');
    await expectAccessible(page(), 'an application with release keys');

    // Two keys during a change: the rotation is signed by the current key.
    const both = sortedKeys([k1.publicKey, k2.publicKey]);
    const rotation = signRotation({ app: 'signed', generation: 1, keys: both }, privateKeyFromBase64(k1.privateKey));
    await section.getByRole('button', { name: 'Rotate release keys' }).click();
    const statement = section.getByLabel('Rotation statement (JSON)');
    await statement.fill(JSON.stringify({ ...rotation, generation: 2 }));
    await section.getByRole('button', { name: 'Rotate keys' }).click();
    await section.locator('#keys-releaseKeyRotation-error').waitFor();
    expect(await section.locator('#keys-releaseKeyRotation-error').innerText()).toContain(
      'does not verify with its signedBy key',
    );
    await statement.fill(JSON.stringify(rotation, null, 2));
    await section.getByRole('button', { name: 'Rotate keys' }).click();
    await waitFor(async () => expect((await listed.innerText()).split('\n')).toEqual(both));
    expect(await section.innerText()).toContain('generation 1');
    expect(owner.problems).toEqual([]);
  });
});
