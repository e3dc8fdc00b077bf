import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
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
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';
import { artifactUploader, createApp, createRelease, uploadArtifact } from '../helpers/ota.js';
import { eventually, waitFor } from '../helpers/poll.js';
import { FILES_REFRESH_MS } from '../../dashboard/src/api/refresh.js';
import { sha256 } from '../helpers/storage.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * The Storage page and the job page's file downloads in a real Chromium against a real
 * coordinator and a real agent: an upload of a few MB with its progress bar (the browser's
 * upload bandwidth is throttled so that the bar has time to move), its download compared byte
 * for byte, deletions and their refusals, bindings for owners only, and a job's output file.
 */

const MAX_FILE_BYTES = 4_000_000;

interface StoredFile {
  id: string;
  filename: string;
  status: string;
  size: number;
  cleanupRule: string;
  expiresAt: string | null;
  bindingId: string;
}

describe.skipIf(!CHROMIUM)('the Storage page in a browser', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let member: TestPage | undefined;
  let a: AgentStateDir;
  let daemon: DaemonProcess | undefined;
  let produce: { id: string; token: string };
  /** The SHA-256 of the file uploaded through the page. */
  let uploadedSha = '';

  beforeAll(async () => {
    t = await startTestCoordinator({ env: { DROVER_MAX_FILE_BYTES: String(MAX_FILE_BYTES) } });
    a = await enrollAgentStateDir(t);
    const workflow = [
      'name: produce',
      'steps:',
      '  - run: |',
      '      printf "made by the agent\\n" > out.txt',
      '      echo "report=file:out.txt" >> "$DROVER_OUTPUT"',
      '    shell: true',
    ];
    writeWorkflowFile(a.stateDir, 'produce', `${workflow.join('\n')}\n`);
    daemon = startDaemonProcess(a.stateDir);
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/workflows`)).body.length === 1,
      30_000,
      'the agent to connect and report its workflow',
    );
    produce = await runnableTrigger(t, a.agentId, 'produce');
    browser = await launchBrowser();
    // Its refreshes come when a test moves its clock (the files list shows a file stored elsewhere).
    owner = await openPage(browser, t.url, { clock: true });
  }, 60_000);
  afterAll(async () => {
    await stopDaemonProcess(daemon);
    await browser?.close();
    await t?.close();
    if (a) fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true });
  });
  screenshotOnFailure(() => [owner?.page, member?.page]);

  const page = (): Page => owner.page;
  const storageUrl = () => `/orgs/${t.orgId}/storage`;
  const signIn = async (p: Page, email: string, password: string) => {
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  };
  const uploadForm = () => page().getByRole('form', { name: /^Upload a file to / });
  const uploadStatus = () => uploadForm().getByRole('status');
  const fileRow = (name: string) => page().getByRole('row', { name, exact: true });
  /** The status cell of a file's row (the first cell after the file's name). */
  const fileStatus = (name: string) => fileRow(name).getByRole('cell').first().innerText();
  const files = async () => (await t.owner.get<StoredFile[]>(`/orgs/${t.orgId}/files`)).body;
  /** The browser sends at most `bytesPerSecond` (-1: no limit), through the debugging protocol. */
  const throttleUploads = async (bytesPerSecond: number) => {
    const cdp = await owner.context.newCDPSession(page());
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: bytesPerSecond,
    });
  };
  /** Records every value the progress bar takes, from the page's DOM changes. */
  const recordProgress = () =>
    page().evaluate(`(() => {
      const seen = [];
      globalThis.__progress = seen;
      new MutationObserver(() => {
        const bar = document.querySelector('progress');
        if (bar) seen.push(bar.value / bar.max);
      }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
    })()`);
  const progressSeen = () => page().evaluate('globalThis.__progress') as Promise<number[]>;
  const chooseFile = (name: string, buffer: Buffer) =>
    uploadForm().getByLabel('File').setInputFiles({ name, mimeType: 'application/octet-stream', buffer });

  it('uploads a file of a few MB with a moving progress bar; it becomes active with its size and expiry', async () => {
    await page().goto(storageUrl());
    await page().waitForURL('**/login?next=*');
    await signIn(page(), OWNER_EMAIL, OWNER_PASSWORD);
    await page().waitForURL(`**${storageUrl()}`);
    await page().getByRole('heading', { name: 'Storage', level: 1 }).waitFor();
    const nav = page().getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link', { name: 'Storage' }).getAttribute('aria-current')).toBe('page');
    const bindings = await page().getByRole('table', { name: 'Storage bindings' }).innerText();
    expect(bindings).toMatch(/local\s+local\s+default/);
    await page().getByText('local holds no file yet.').waitFor();
    await expectAccessible(page(), 'the Storage page');

    const data = randomBytes(3_000_000);
    uploadedSha = sha256(data);
    await chooseFile('firmware.bin', data);
    expect(await uploadForm().getByLabel('Name').inputValue()).toBe('firmware.bin');
    await uploadForm().getByLabel('Keep for').fill('2');
    await uploadForm().getByLabel('Unit').selectOption({ label: 'hours' });
    await throttleUploads(1_000_000);
    await recordProgress();
    await uploadForm().getByRole('button', { name: 'Upload' }).click();
    await uploadForm().getByRole('progressbar', { name: 'Upload progress' }).waitFor();
    await uploadStatus()
      .getByText(/^Sending: /)
      .waitFor();
    await uploadStatus().getByText('Uploaded firmware.bin (3.0 MB); the file is active.').waitFor({ timeout: 60_000 });
    await throttleUploads(-1);
    const seen = await progressSeen();
    // The bar moved: it showed values between empty and full, rising.
    const between = seen.filter((v) => v > 0 && v < 1);
    expect(between.length, `progress values ${seen.join(', ')}`).toBeGreaterThan(1);
    expect(new Set(between).size).toBeGreaterThan(1);
    expect(between).toEqual([...between].sort((x, y) => x - y));

    const [stored] = (await files()).filter((f) => f.filename === 'firmware.bin');
    expect(stored).toMatchObject({ status: 'active', size: data.length, cleanupRule: 'ttl' });
    const ttlMs = new Date(stored!.expiresAt!).getTime() - Date.now();
    expect(ttlMs).toBeGreaterThan(60 * 60_000);
    expect(ttlMs).toBeLessThanOrEqual(2 * 60 * 60_000);
    const row = await fileRow('firmware.bin').innerText();
    expect(await fileStatus('firmware.bin')).toBe('active');
    expect(row).toContain('3.0 MB');
    expect(row).toContain('deleted when it expires');
    expect(row).toContain('in 2 hours');
    await expectAccessible(page(), 'the Storage page with a file');
    await docScreenshot(page(), 'storage');
  });

  it('downloads the same bytes, through a fresh URL at each click', async () => {
    const [stored] = (await files()).filter((f) => f.filename === 'firmware.bin');
    const urls: string[] = [];
    page().on('request', (r) => {
      if (r.url().includes(`/storage/blobs/${stored!.id}`)) urls.push(r.url());
    });
    for (let i = 0; i < 2; i++) {
      const download = page().waitForEvent('download');
      await fileRow('firmware.bin').getByRole('button', { name: 'Download firmware.bin' }).click();
      const bytes = fs.readFileSync((await (await download).path())!);
      expect((await download).suggestedFilename()).toBe('firmware.bin');
      expect(bytes.length).toBe(stored!.size);
      expect(sha256(bytes)).toBe(uploadedSha);
    }
    expect(new Set(urls).size).toBe(2);
  });

  it('deletes the file after a confirmation', async () => {
    await fileRow('firmware.bin').getByRole('button', { name: 'Delete firmware.bin' }).click();
    const confirm = page().getByRole('group', { name: 'Delete firmware.bin' });
    await confirm.getByRole('button', { name: 'Keep it' }).click();
    expect(await confirm.count()).toBe(0);
    await fileRow('firmware.bin').getByRole('button', { name: 'Delete firmware.bin' }).click();
    await expectAccessible(page(), 'the delete confirmation');
    await confirm.getByRole('button', { name: 'Delete file' }).click();
    await eventually(async () => (await fileStatus('firmware.bin')) === 'deleted', 20_000, 'deleted');
    expect(await fileRow('firmware.bin').getByRole('button', { name: 'Download firmware.bin' }).count()).toBe(0);
    expect((await files()).find((f) => f.filename === 'firmware.bin')?.status).toBe('deleted');

    await page().getByLabel('Status').selectOption('active');
    await page().waitForURL(/status=active/);
    await page().getByText('No active file in local.').waitFor();
    await page().getByLabel('Status').selectOption('deleted');
    await fileRow('firmware.bin').waitFor();
    await page().getByLabel('Status').selectOption('');
  });

  it('cancels an upload in flight, and keeps nothing of it', async () => {
    await chooseFile('cancelled.bin', randomBytes(3_000_000));
    await throttleUploads(200_000);
    await uploadForm().getByRole('button', { name: 'Upload' }).click();
    await uploadStatus()
      .getByText(/^Sending: /)
      .waitFor();
    await uploadForm().getByRole('button', { name: 'Cancel upload' }).click();
    await uploadStatus().getByText('Upload cancelled; nothing was kept.').waitFor();
    await throttleUploads(-1);
    await eventually(
      async () => (await files()).find((f) => f.filename === 'cancelled.bin')?.status === 'deleted',
      20_000,
      'the pending file of the cancelled upload to be deleted',
    );
  });

  it('says which step failed: a time to live out of range at its field, a file over the limit from the store', async () => {
    await chooseFile('tiny.txt', Buffer.from('tiny'));
    // Out of range in the form's own units, said in them, before anything is sent.
    const presigns: string[] = [];
    const watch = (request: { url(): string }) => {
      if (request.url().includes('/presign-upload')) presigns.push(request.url());
    };
    page().on('request', watch);
    const ttl = uploadForm().getByLabel('Keep for');
    const ttlError = async () => {
      await eventually(
        async () => (await ttl.getAttribute('aria-invalid')) === 'true',
        20_000,
        'the TTL marked invalid',
      );
      return page()
        .locator(`[id="${await ttl.getAttribute('aria-describedby')}"]`)
        .innerText();
    };
    await ttl.fill('0');
    await uploadForm().getByLabel('Unit').selectOption('days');
    await uploadForm().getByRole('button', { name: 'Upload' }).click();
    expect(await ttlError()).toBe('must be from 1 minute to 90 days, got 0 days');
    await expectAccessible(page(), 'a refused upload');
    await ttl.fill('1e22');
    await uploadForm().getByLabel('Unit').selectOption('minutes');
    await uploadForm().getByRole('button', { name: 'Upload' }).click();
    await eventually(
      async () => (await ttlError()) === 'must be from 1 minute to 90 days (129,600 minutes), got 1e22 minutes',
      10_000,
      'the TTL refused in minutes',
    );
    // Text the browser cannot read as a number is the input's "": it is said as such, not as "got nothing".
    await ttl.fill('');
    await ttl.pressSequentially('1e');
    await uploadForm().getByRole('button', { name: 'Upload' }).click();
    await waitFor(async () => expect(await ttlError()).toBe('must be a number, such as 1'));
    page().off('request', watch);
    expect(presigns).toEqual([]);
    await uploadForm().getByLabel('Unit').selectOption('days');

    await uploadForm().getByLabel('Keep for').fill('1');
    await chooseFile('too-big.bin', randomBytes(MAX_FILE_BYTES + 1000));
    await uploadForm().getByRole('button', { name: 'Upload' }).click();
    const alert = uploadForm().getByRole('alert');
    await alert.getByText(/^Sending the file failed: /).waitFor({ timeout: 20_000 });
    expect(await alert.innerText()).toMatch(/larger than/i);
    await eventually(
      async () => (await files()).find((f) => f.filename === 'too-big.bin')?.status === 'deleted',
      20_000,
      'the pending file of the refused upload to be deleted',
    );
  });

  it("explains that a release's artifact cannot be deleted (409 file_in_use)", async () => {
    const fileId = await uploadArtifact(await artifactUploader(t), 'release bytes', 'app-1.0.tar.gz');
    const app = await createApp(t.owner, t.orgId, { slug: 'kiosk' });
    await createRelease(t.owner, t.orgId, app.id, { version: '1.0.0', artifactFileId: fileId });
    // The list's next refresh shows it.
    await page().clock.runFor(FILES_REFRESH_MS);
    const row = fileRow('app-1.0.tar.gz');
    await row.waitFor();
    await row.getByRole('button', { name: 'Delete app-1.0.tar.gz' }).click();
    await page()
      .getByRole('group', { name: 'Delete app-1.0.tar.gz' })
      .getByRole('button', { name: 'Delete file' })
      .click();
    const alert = page().getByRole('group', { name: 'Delete app-1.0.tar.gz' }).getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toMatch(/artifact of a release that is not yanked.*Yank the release first/s);
    expect((await t.owner.get<StoredFile>(`/orgs/${t.orgId}/files/${fileId}`)).body.status).toBe('active');
  });

  it('lets the owner create bindings (s3 settings checked at their fields) and delete one once it is empty', async () => {
    const form = page().getByRole('form', { name: 'New storage binding' });
    await form.getByRole('textbox', { name: /^Name/ }).fill('archive');
    await form.getByRole('combobox', { name: /^Backend/ }).selectOption('s3');
    await form.getByRole('textbox', { name: /^Endpoint/ }).fill('ftp://x');
    await form.getByRole('button', { name: 'Create binding' }).click();
    await form.getByText('Some fields need a change; the reason is next to each.').waitFor();
    expect(await form.getByRole('textbox', { name: /^Endpoint/ }).getAttribute('aria-invalid')).toBe('true');
    expect(await form.getByText('must be an http or https URL without credentials', { exact: false }).count()).toBe(1);
    expect(await form.getByRole('textbox', { name: /^Bucket/ }).getAttribute('aria-invalid')).toBe('true');
    expect(await form.getByText('is required for the s3 backend').count()).toBe(4);
    await expectAccessible(page(), 'a refused binding');
    await docScreenshot(page(), 'storage-binding-form');

    await form.getByRole('combobox', { name: /^Backend/ }).selectOption('local');
    await form.getByRole('button', { name: 'Create binding' }).click();
    await form.getByText('Created the binding archive.').waitFor();
    const bindings = page().getByRole('table', { name: 'Storage bindings' });
    await bindings.getByRole('row', { name: 'archive' }).waitFor();
    // A name the organization has already: the API's 409 is said at the name, as a field's refusal.
    const name = form.getByRole('textbox', { name: /^Name/ });
    await name.fill('archive');
    await form.getByRole('button', { name: 'Create binding' }).click();
    await form.getByRole('alert').waitFor();
    expect(await name.getAttribute('aria-invalid')).toBe('true');
    expect(await form.locator('#binding-name-error').innerText()).toBe(
      'The organization already has a storage binding named "archive"',
    );
    expect(await form.getByRole('alert').innerText()).toBe('Some fields need a change; the reason is next to each.');
    await name.fill('');
    await bindings.getByRole('link', { name: 'Files of archive' }).click();
    await page().getByRole('heading', { name: 'Files in archive' }).waitFor();
    await chooseFile('kept.txt', Buffer.from('kept in the archive'));
    await uploadForm().getByLabel('Cleanup').selectOption('persistent');
    expect(await uploadForm().getByLabel('Keep for').count()).toBe(0);
    await uploadForm().getByRole('button', { name: 'Upload' }).click();
    await uploadStatus().getByText('Uploaded kept.txt (19 bytes); the file is active.').waitFor();
    expect(await fileRow('kept.txt').innerText()).toContain('kept until deleted');

    const archiveRow = bindings.getByRole('row', { name: 'archive' });
    await archiveRow.getByRole('button', { name: 'Delete archive' }).click();
    await archiveRow.getByRole('button', { name: 'Delete binding' }).click();
    const alert = archiveRow.getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toBe(
      'The binding was not deleted: The storage binding still holds 1 file(s) not deleted; delete them first',
    );
    await fileRow('kept.txt').getByRole('button', { name: 'Delete kept.txt' }).click();
    await page().getByRole('group', { name: 'Delete kept.txt' }).getByRole('button', { name: 'Delete file' }).click();
    await eventually(async () => (await fileStatus('kept.txt')) === 'deleted', 20_000, 'kept.txt deleted');
    await archiveRow.getByRole('button', { name: 'Delete binding' }).click();
    await eventually(async () => (await archiveRow.count()) === 0, 20_000, 'the archive binding gone');
    // The default binding has no delete button.
    expect(await bindings.getByRole('button', { name: 'Delete local' }).count()).toBe(0);
    expect(owner.problems).toEqual([]);
  });

  it('shows a member the bindings and files, without the owner-only binding actions', async () => {
    await addUser(t.owner, t.orgId, 'member@example.test', 'member');
    member = await openPage(browser, t.url);
    await member.page.goto(storageUrl());
    await member.page.waitForURL('**/login?next=*');
    await signIn(member.page, 'member@example.test', MEMBER_PASSWORD);
    await member.page.getByRole('heading', { name: 'Files in local' }).waitFor();
    await member.page.getByRole('row', { name: 'app-1.0.tar.gz', exact: true }).waitFor();
    expect(await member.page.getByRole('form', { name: 'New storage binding' }).count()).toBe(0);
    const bindings = member.page.getByRole('table', { name: 'Storage bindings' });
    expect(await bindings.getByRole('columnheader', { name: 'Actions' }).count()).toBe(0);
    expect(await bindings.getByRole('button').count()).toBe(0);
    // Files are every member's: upload, download and delete stay.
    await member.page.getByRole('form', { name: 'Upload a file to local' }).waitFor();
    await expectAccessible(member.page, "a member's Storage page");
    expect(member.problems).toEqual([]);
  });

  it("gives a working download of a job's output file on its page", async () => {
    const run = await t.api.post(`/triggers/${produce.id}/run`, { token: produce.token, body: {} });
    expect(run.status, run.text).toBe(202);
    await page().goto(run.body.statusUrl);
    await page().getByRole('heading', { level: 1 }).getByText('success').waitFor({ timeout: 30_000 });
    const button = page().getByRole('button', { name: 'Download the output file report' });
    await button.waitFor();
    const download = page().waitForEvent('download');
    await button.click();
    expect(fs.readFileSync((await (await download).path())!, 'utf8')).toBe('made by the agent\n');
    await expectAccessible(page(), 'a job with an output file');
    await docScreenshot(page(), 'job-files');
    expect(owner.problems).toEqual([]);
  });

  it('says what to change when the dashboard is open at another address than DROVER_PUBLIC_URL', async () => {
    const other = await openPage(browser, t.url.replace('127.0.0.1', 'localhost'));
    try {
      await other.page.goto(storageUrl());
      await signIn(other.page, OWNER_EMAIL, OWNER_PASSWORD);
      const form = other.page.getByRole('form', { name: 'Upload a file to local' });
      await form
        .getByLabel('File')
        .setInputFiles({ name: 'elsewhere.txt', mimeType: 'text/plain', buffer: Buffer.from('x') });
      await form.getByRole('button', { name: 'Upload' }).click();
      const alert = form.getByRole('alert');
      await alert.waitFor();
      expect(await alert.innerText()).toBe(
        `Sending the file failed: The coordinator gives upload addresses at ${t.url}, but this dashboard is open at ${t.url.replace('127.0.0.1', 'localhost')}, and the dashboard may only send files to its own address. Open the dashboard at ${t.url}, or set DROVER_PUBLIC_URL to ${t.url.replace('127.0.0.1', 'localhost')} on the coordinator.`,
      );
      // Refused before the browser tried: no CSP violation, and nothing kept.
      expect(other.problems).toEqual([]);
      await eventually(
        async () => (await files()).find((f) => f.filename === 'elsewhere.txt')?.status === 'deleted',
        20_000,
        'the pending file to be deleted',
      );
    } finally {
      await other.context.close();
    }
  });

  it('shows older files than the newest 200 with "Show older files"', async () => {
    for (let i = 0; i < 201; i++) {
      const made = await t.owner.post(`/orgs/${t.orgId}/files/presign-upload`, {
        body: { filename: `older-${i}.txt`, cleanupRule: 'persistent' },
      });
      expect(made.status, made.text).toBe(201);
    }
    await page().goto(storageUrl());
    await fileRow('older-200.txt').waitFor();
    expect(await fileRow('older-0.txt').count()).toBe(0);
    await page().getByRole('button', { name: 'Show older files' }).click();
    await fileRow('older-0.txt').waitFor();
    expect(owner.problems).toEqual([]);
  });
});
