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
  signIn,
  type TestPage,
} from '../helpers/browser.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { eventually, waitFor } from '../helpers/poll.js';
import { storageClient, uploadFile } from '../helpers/storage.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * Run by hand with a `file` param, in a real Chromium against a real coordinator and a real
 * agent: the param is chosen among the organization's active files, or uploaded on the spot
 * from the form; either way the job gets the file (the workflow reports its content).
 */

const READER = [
  'name: reader',
  'params:',
  '  - {name: bundle, type: file, required: true}',
  'steps:',
  '  - run: echo "content=$(cat "$DROVER_PARAM_BUNDLE")" >> "$DROVER_OUTPUT"',
  '    shell: true',
].join('\n');

interface JobBody {
  id: string;
  status: string;
  params: Record<string, unknown>;
  output: Record<string, unknown> | null;
}

describe.skipIf(!CHROMIUM)('run by hand with a file param, in a browser', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let a: AgentStateDir;
  let daemon: DaemonProcess | undefined;
  let triggerId: string;

  beforeAll(async () => {
    t = await startTestCoordinator();
    a = await enrollAgentStateDir(t);
    writeWorkflowFile(a.stateDir, 'reader', `${READER}\n`);
    daemon = startDaemonProcess(a.stateDir);
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/workflows`)).body.length === 1,
      30_000,
      'the agent to connect and report its workflow',
    );
    triggerId = (await runnableTrigger(t, a.agentId, 'reader')).id;
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
  }, 60_000);
  afterAll(async () => {
    await stopDaemonProcess(daemon);
    await browser?.close();
    await t?.close();
    if (a) fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true });
  });
  screenshotOnFailure(() => [owner?.page]);

  const page = (): Page => owner.page;
  const picker = () => page().getByLabel('bundle (required)');
  /** Runs now, lands on the job's page, and answers the job once it has ended. */
  async function runAndWait(): Promise<JobBody> {
    await page().getByRole('button', { name: 'Run now' }).click();
    await page().waitForURL('**/api/jobs/*');
    const jobId = page().url().split('/').pop()!;
    let job: JobBody | undefined;
    await waitFor(
      async () => {
        job = (await t.owner.get<JobBody>(`/jobs/${jobId}`)).body;
        expect(job.status).not.toMatch(/^(pending|queued|running)$/);
      },
      { timeout: 30_000, interval: 100 },
    );
    return job!;
  }

  it('chooses an active file of the organization for the param; the job reads it', async () => {
    const uploader = await storageClient(t, null, ['read', 'write']);
    const { fileId } = await uploadFile(uploader, 'stored before', {
      filename: 'before.txt',
      cleanupRule: 'persistent',
    });
    await page().goto(`/orgs/${t.orgId}/triggers/${triggerId}`);
    await waitFor(async () => expect(await picker().locator('option').allInnerTexts()).toHaveLength(2));
    expect(await picker().locator('option').nth(1).innerText()).toMatch(/^before\.txt \(13 bytes, /);
    await expectAccessible(page(), 'run by hand with a file param');
    await picker().selectOption({ value: fileId });
    const job = await runAndWait();
    expect(job).toMatchObject({
      status: 'success',
      params: { bundle: { __type: 'FileRef', id: fileId } },
      output: { content: 'stored before' },
    });
  });

  it('uploads a file on the spot from the form; it is chosen and the job reads it', async () => {
    await page().goto(`/orgs/${t.orgId}/triggers/${triggerId}`);
    await page().getByRole('button', { name: 'Upload a file for bundle' }).click();
    const upload = page().getByRole('group', { name: 'Upload a file for bundle' });
    await upload
      .getByLabel('File', { exact: true })
      .setInputFiles({ name: 'spot.txt', mimeType: 'text/plain', buffer: Buffer.from('uploaded on the spot') });
    await upload.getByRole('button', { name: 'Upload', exact: true }).click();
    await upload.getByText('Uploaded spot.txt').waitFor();
    await waitFor(async () => expect(await picker().locator('option:checked').innerText()).toMatch(/^spot\.txt /));
    await expectAccessible(page(), 'run by hand after an upload for a file param');
    await docScreenshot(page(), 'run-by-hand-file');
    const job = await runAndWait();
    const files = (await t.owner.get<{ id: string; filename: string }[]>(`/orgs/${t.orgId}/files?status=active`)).body;
    const spot = files.find((f) => f.filename === 'spot.txt');
    expect(job).toMatchObject({
      status: 'success',
      params: { bundle: { __type: 'FileRef', id: spot!.id } },
      output: { content: 'uploaded on the spot' },
    });
  });

  it('leaves no file chosen: the coordinator refuses the required param at its input', async () => {
    await page().goto(`/orgs/${t.orgId}/triggers/${triggerId}`);
    await picker().waitFor();
    await page().getByRole('button', { name: 'Run now' }).click();
    await page().locator('#param-bundle-error').waitFor();
    expect(await picker().getAttribute('aria-invalid')).toBe('true');
  });
});
