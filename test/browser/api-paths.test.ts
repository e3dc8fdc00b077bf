import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchBrowser, openPage, screenshotOnFailure, signIn, type TestPage } from '../helpers/browser.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { ApiError, apiPath } from '../../dashboard/src/api/client.js';

/**
 * The dashboard's API paths: every value put in one is encoded (apiPath), so an address whose
 * parameter decodes to `../orgs/<id>/members?x=` makes the page ask for a job of that strange
 * id, never for another endpoint with the visitor's session.
 */

describe('apiPath', () => {
  it('encodes every value, so that a value is one path segment or one query value', () => {
    expect(apiPath`/jobs/${'../orgs/o/members?x='}?logsAfter=${0}&logsLimit=${10}`).toBe(
      '/jobs/..%2Forgs%2Fo%2Fmembers%3Fx%3D?logsAfter=0&logsLimit=10',
    );
    expect(apiPath`/orgs/${'a b#c'}/agents/${'%2e%2e'}`).toBe('/orgs/a%20b%23c/agents/%252e%252e');
    expect(apiPath`/auth/device/${'ABCD-EFGH'}/approve`).toBe('/auth/device/ABCD-EFGH/approve');
    expect(apiPath`/orgs`).toBe('/orgs');
  });

  it('puts a URLSearchParams in as it serializes, right after "?" only', () => {
    const query = new URLSearchParams({ status: 'failed', cursor: 'a&b=c' });
    expect(apiPath`/orgs/${'o'}/jobs?${query}`).toBe('/orgs/o/jobs?status=failed&cursor=a%26b%3Dc');
    expect(() => apiPath`/orgs/${'o'}/jobs?${'status=failed'}`).toThrow(TypeError);
    expect(() => apiPath`/orgs/${query}/jobs`).toThrow(TypeError);
  });

  it('refuses a value that would be a whole segment the browser resolves (".", "..") or an empty one, as a 404', () => {
    for (const value of ['', '.', '..']) {
      const refusal = (() => {
        try {
          return apiPath`/jobs/${value}/cancel`;
        } catch (error) {
          return error;
        }
      })();
      expect(refusal, JSON.stringify(value)).toBeInstanceOf(ApiError);
      expect((refusal as ApiError).statusCode).toBe(404);
    }
    // In a query value they are text like any other.
    expect(apiPath`/orgs/${'o'}/files?status=${'..'}`).toBe('/orgs/o/files?status=..');
  });
});

describe.skipIf(!CHROMIUM)('a crafted address on the dashboard', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;

  beforeAll(async () => {
    t = await startTestCoordinator();
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page]);

  it('asks for a job or a batch of the id as written, never for the path it spells', async () => {
    const crafted = `..%2Forgs%2F${t.orgId}%2Fmembers%3Fx%3D`;
    const paths: string[] = [];
    owner.page.on('request', (r) => {
      const url = new URL(r.url());
      if (url.pathname.startsWith('/v1/')) paths.push(url.pathname);
    });
    for (const page of ['jobs', 'batches']) {
      const asked = owner.page.waitForRequest((r) => new URL(r.url()).pathname === `/v1/${page}/${crafted}`);
      await owner.page.goto(`/api/${page}/${crafted}`);
      await asked;
      // The coordinator's 404 for an id that is not one (no such job), said on the page.
      await owner.page.getByRole('alert').first().waitFor();
    }
    expect(paths.filter((p) => p.includes('members'))).toEqual(
      expect.arrayContaining([`/v1/jobs/${crafted}`, `/v1/batches/${crafted}`]),
    );
    expect(paths.filter((p) => p.includes('members') && !p.endsWith(crafted))).toEqual([]);
    expect(owner.problems).toEqual([]);
  });
});
