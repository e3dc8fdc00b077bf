import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { S3_KEYS, TestS3 } from '../helpers/s3.js';
import { sha256 } from '../helpers/storage.js';

/**
 * The Storage page of a coordinator whose files are in an S3-compatible bucket (DROVER_STORAGE_URL),
 * in a real Chromium: the upload goes from the browser straight to the store (its CORS rules allow
 * it, the page's Content-Security-Policy names it), the download too; a binding's bucket whose CORS
 * rules do not allow the page is refused by the browser, and the page says what to do.
 */
describe.skipIf(!CHROMIUM)('the Storage page with files in a bucket', () => {
  const s3 = new TestS3(['drover-files', 'no-cors'], ['drover-files']);
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;

  beforeAll(async () => {
    await s3.start();
    t = await startTestCoordinator({ env: { ...s3.storageEnv('drover-files'), ...s3.bindingEnv() } });
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await s3.close();
  });
  screenshotOnFailure(() => [owner?.page]);

  const page = (): Page => owner.page;
  const uploadForm = () => page().getByRole('form', { name: /^Upload a file to / });
  const fileRow = (name: string) => page().getByRole('row', { name, exact: true });
  const chooseFile = (name: string, buffer: Buffer) =>
    uploadForm().getByLabel('File').setInputFiles({ name, mimeType: 'application/octet-stream', buffer });

  it('uploads from the browser straight to the bucket, and downloads from it', async () => {
    const response = await page().goto(`/orgs/${t.orgId}/storage`);
    expect(response?.headers()['content-security-policy']).toContain(`connect-src 'self' ${s3.endpoint}`);
    await page().getByRole('heading', { name: 'Storage', level: 1 }).waitFor();
    const data = randomBytes(300_000);
    const sent: string[] = [];
    page().on('request', (r) => {
      if (r.method() === 'PUT') sent.push(r.url());
    });
    await chooseFile('bundle.bin', data);
    await uploadForm().getByRole('button', { name: 'Upload' }).click();
    await uploadForm().getByRole('status').getByText('Uploaded bundle.bin (300 KB); the file is active.').waitFor();
    expect(sent).toHaveLength(1);
    expect(sent[0]!.startsWith(`${s3.endpoint}/drover-files/`)).toBe(true);
    expect(s3.objectKeys('drover-files')).toHaveLength(1);

    const download = page().waitForEvent('download');
    await fileRow('bundle.bin').getByRole('button', { name: 'Download bundle.bin' }).click();
    expect((await download).url().startsWith(`${s3.endpoint}/drover-files/`)).toBe(true);
    expect(sha256(fs.readFileSync((await (await download).path())!))).toBe(sha256(data));
    await expectAccessible(page(), 'the Storage page with a file in a bucket');
    expect(owner.problems).toEqual([]);
  });

  it("says what to do when a binding's bucket does not let the page upload", async () => {
    const created = await t.owner.post(`/orgs/${t.orgId}/storage-bindings`, {
      body: {
        name: 'closed',
        backend: 's3',
        endpoint: s3.endpoint,
        bucket: 'no-cors',
        region: 'us-east-1',
        ...S3_KEYS,
        forcePathStyle: true,
      },
    });
    expect(created.status, created.text).toBe(201);
    await page().reload();
    await page()
      .getByRole('table', { name: 'Storage bindings' })
      .getByRole('link', { name: 'Files of closed' })
      .click();
    await page().getByRole('heading', { name: 'Files in closed' }).waitFor();
    await chooseFile('refused.bin', randomBytes(1000));
    await uploadForm().getByRole('button', { name: 'Upload' }).click();
    const alert = uploadForm().getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toContain(
      `The file could not be sent to the store at ${s3.endpoint}: the connection failed or was refused.`,
    );
    expect(await alert.innerText()).toContain('with the API or the drover command line');
    expect(s3.objectKeys('no-cors')).toEqual([]);
  });
});
