import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHROMIUM,
  expectAccessible,
  launchBrowser,
  openPage,
  screenshotOnFailure,
  type TestPage,
} from '../helpers/browser.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';

/**
 * The interactive API reference at /docs in a real Chromium: Swagger UI's bundled files load
 * from the coordinator under its strict Content-Security-Policy (no violation reported), and it
 * lists the operations of /v1/openapi.json with their operationIds.
 */

describe.skipIf(!CHROMIUM)('the API reference at /docs in a browser', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let reader: TestPage;

  beforeAll(async () => {
    t = await startTestCoordinator();
    browser = await launchBrowser();
    reader = await openPage(browser, t.url);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [reader?.page]);

  it('lists the operations, with no CSP violation and no request leaving the coordinator', async () => {
    const page = reader.page;
    const elsewhere: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(t.url) && !request.url().startsWith('data:')) elsewhere.push(request.url());
    });
    const failed: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    const answer = await page.goto('/docs');
    expect(answer?.status()).toBe(200);
    expect(answer?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.getByText('Drover coordinator API').first().waitFor({ timeout: 20_000 });
    const audit = page.locator('.opblock').filter({ hasText: '/v1/orgs/{orgId}/audit' });
    await audit.first().waitFor();
    expect(await audit.first().innerText()).toContain('listAuditEntries');
    expect(await page.locator('.opblock').count()).toBeGreaterThan(50);
    // An operation opens with its parameters and its example answer.
    await audit.first().locator('.opblock-summary').click();
    await audit.first().getByText('actorType').first().waitFor();
    expect(await audit.first().locator('.example, .highlight-code').first().innerText()).toContain('"action"');
    // Swagger UI's own structure: a button inside each operation's header, and its server and
    // media-type lists without a label. Everything else (contrast included) passes.
    await expectAccessible(page, 'the API reference', ['nested-interactive', 'select-name']);
    expect(reader.problems).toEqual([]);
    expect(elsewhere).toEqual([]);
    expect(failed).toEqual([]);
  });
});
