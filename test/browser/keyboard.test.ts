import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent } from '../helpers/agent.js';
import { CHROMIUM, launchBrowser, openPage, screenshotOnFailure, signIn, type TestPage } from '../helpers/browser.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { artifactUploader, createApp, createRelease, uploadArtifact } from '../helpers/ota.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * The dashboard with the keyboard alone, as a person who cannot use a mouse (or uses a screen
 * reader) does: a button that swaps itself for a confirmation or a small form takes the keyboard
 * into it, Escape closes it as its cancel button does, and either way the keyboard is back on the
 * button, never dropped on the page's body (where the next Tab starts over, and a screen reader
 * says nothing); nor when a button pressed is disabled while its request is in flight, or a filter
 * form is applied. Each page is named in its title (what a screen reader says when the page changes,
 * what a tab shows). And on a small screen (a phone's 320 px, or 1,280 px zoomed to 400%), as at a
 * site: no page scrolls sideways, a wide table scrolls in its own box. One coordinator, one
 * browser, several pages.
 */

describe.skipIf(!CHROMIUM)('the dashboard with the keyboard', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestCoordinator();
    const { owner: api, orgId } = t;
    const edge = await enrollTestAgent(api, orgId, { hostname: 'edge-keys' });
    ids.agent = edge.agentId;
    const trigger = await api.post<{ id: string }>(`/orgs/${orgId}/triggers`, {
      body: { name: 'nightly', agentId: edge.agentId, scopeType: 'agent', responseMode: 'async' },
    });
    expect(trigger.status, trigger.text).toBe(201);
    ids.trigger = trigger.body.id;
    // A trigger on a selector, run once: its batch.
    const fleet = await api.post<{ id: string }>(`/orgs/${orgId}/triggers`, {
      body: {
        name: 'fleet-wide',
        agentId: null,
        agentSelector: '!role',
        fanout: 'all',
        scopeType: 'workflow',
        workflowName: 'deploy',
        responseMode: 'async',
      },
    });
    expect(fleet.status, fleet.text).toBe(201);
    ids.fleet = fleet.body.id;
    const batch = await api.post<{ batchId: string }>(`/orgs/${orgId}/triggers/${ids.fleet}/run`);
    expect(batch.status, batch.text).toBe(202);
    ids.batch = batch.body.batchId;
    await issueApiToken(api, orgId, [], { name: 'ci' });
    const app = await createApp(api, orgId, { slug: 'kiosk' });
    ids.app = app.id;
    const artifact = await uploadArtifact(await artifactUploader(t), 'artifact bytes');
    await createRelease(api, orgId, app.id, { version: '1.0.0', artifactFileId: artifact, notes: null });
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page]);

  const page = (): Page => owner.page;
  /** The focused element: its tag and its name (aria-label), else an input's value, else its text. */
  const focused = () =>
    page().evaluate(() => {
      type El = { tagName: string; getAttribute(n: string): string | null; textContent: string; value?: string };
      const el = (globalThis as unknown as { document: { activeElement: El } }).document.activeElement;
      const words = el.getAttribute('aria-label') ?? (el.tagName === 'INPUT' ? el.value! : el.textContent);
      return `${el.tagName.toLowerCase()} ${words.trim()}`;
    });

  /**
   * Opens what `opener` swaps in with Enter, expects the keyboard on `into`, closes it with
   * `close` (Escape, or Enter on its cancel button) and expects the keyboard back on the opener.
   */
  async function roundTrip(path: string, opener: string, into: string, close: string) {
    await page().goto(path);
    const button = page().getByRole('button', { name: opener, exact: true });
    await button.focus();
    await page().keyboard.press('Enter');
    await expect.poll(focused, { message: `the keyboard after ${opener} on ${path}` }).toBe(into);
    if (close === 'Escape') {
      await page().keyboard.press('Escape');
    } else {
      await page().getByRole('button', { name: close, exact: true }).focus();
      await page().keyboard.press('Enter');
    }
    await button.waitFor();
    await expect.poll(focused, { message: `the keyboard after ${close} on ${path}` }).toBe(`button ${opener}`);
  }

  it('takes the keyboard into a confirmation or a small form, and back to its button on Escape or cancel', async () => {
    const org = `/orgs/${t.orgId}`;
    await roundTrip(`${org}/agents`, 'Rename edge-keys', 'input edge-keys', 'Escape');
    await roundTrip(`${org}/agents`, 'Revoke edge-keys', 'div Revoke edge-keys', 'Keep it');
    await roundTrip(`${org}/triggers/${ids.trigger}`, 'Delete trigger', 'div Delete nightly', 'Escape');
    await roundTrip(`${org}/api-tokens`, 'Revoke ci', 'div Revoke ci', 'Keep it');
    await roundTrip(`${org}/members`, `Change role: ${OWNER_EMAIL}`, 'select operatormemberviewer', 'Escape');
    await roundTrip(`${org}/apps`, 'Delete kiosk', 'div Delete kiosk', 'Escape');
    // The publish dialog: its first choice (publish now) takes the keyboard.
    await roundTrip(`${org}/apps/${ids.app}`, 'Publish 1.0.0', 'input now', 'Cancel');
    await roundTrip('/account', 'Sign out everywhere…', 'div Sign out everywhere', 'Stay signed in');
    // Nothing was done on the way.
    expect((await t.owner.get(`/orgs/${t.orgId}/triggers/${ids.trigger}`)).status).toBe(200);
    expect((await t.owner.get<{ status: string }>(`/orgs/${t.orgId}/agents/${ids.agent}`)).body.status).not.toBe(
      'revoked',
    );
    expect(owner.problems).toEqual([]);
  });

  it("names each page in its title: the page's heading, then Drover", async () => {
    const org = `/orgs/${t.orgId}`;
    for (const [path, title] of [
      [`${org}/no-such-page`, 'Page not found · Drover'],
      ['/account', 'Your account · Drover'],
      [`${org}/jobs`, 'Jobs · Drover'],
      [`${org}/agents/${ids.agent}`, 'edge-keys · Drover'],
      [`/api/batches/${ids.batch}`, /^Batch #1 deploy \w+ · Drover$/],
      [`${org}/triggers/${ids.trigger}`, 'nightly · Drover'],
    ] as const) {
      await page().goto(path);
      const titled = expect.poll(() => page().title(), { message: `the title of ${path}` });
      await (typeof title === 'string' ? titled.toBe(title) : titled.toMatch(title));
    }
    // Moving within the dashboard (no page load) names the new page too.
    await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Triggers' }).click();
    await expect.poll(() => page().title()).toBe('Triggers · Drover');
    await page().goBack();
    await expect.poll(() => page().title()).toBe('nightly · Drover');
  });

  it("skips the header's links with the first Tab: Skip to content", async () => {
    const jobs = `/orgs/${t.orgId}/jobs`;
    await page().goto(jobs);
    await page().getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    // Where the keyboard is: in the header, in the page's content (main), or elsewhere.
    const where = () =>
      page().evaluate(() => {
        type El = { tagName: string; closest(s: string): unknown };
        const el = (globalThis as unknown as { document: { activeElement: El } }).document.activeElement;
        return el.closest('header') ? 'header' : el.tagName === 'MAIN' ? 'main' : el.closest('main') ? 'in main' : '';
      });
    await page().keyboard.press('Tab');
    expect(await focused()).toBe('a Skip to content');
    // Out of sight until then, drawn in the page once it has the keyboard.
    const box = await page().getByRole('link', { name: 'Skip to content' }).boundingBox();
    expect(box!.y).toBeGreaterThanOrEqual(0);
    await page().keyboard.press('Enter');
    await expect.poll(where).toBe('main');
    await page().keyboard.press('Tab');
    expect(await where()).toBe('in main');
    // The first field of the content: the filters' Status.
    expect(await focused()).toMatch(/^select anypending/);
    // Its address is the page's own still.
    expect(new URL(page().url()).pathname + new URL(page().url()).hash).toBe(jobs);
  });

  it('keeps the keyboard on Filter and Clear of the Jobs and the Audit log filters', async () => {
    const org = `/orgs/${t.orgId}`;
    /** Presses `name` with the keyboard, waits for the address's search to be `search`. */
    const press = async (name: string, search: string) => {
      await page().getByRole('button', { name, exact: true }).focus();
      await page().keyboard.press('Enter');
      await page().waitForURL((url) => url.search === search);
      await expect.poll(focused, { message: `the keyboard after ${name}` }).toBe(`button ${name}`);
    };
    await page().goto(`${org}/jobs`);
    // Its first field, Status (a label's name takes in the words of the select inside it).
    const status = page().getByRole('form', { name: 'Filter jobs' }).locator('select').first();
    await status.selectOption('rejected');
    await press('Filter', '?status=rejected');
    expect(await status.inputValue()).toBe('rejected');
    await press('Clear', '');
    expect(await status.inputValue()).toBe('');
    // Back: the fields show the address's filters again.
    await page().goBack();
    await page().waitForURL((url) => url.search === '?status=rejected');
    await expect.poll(() => status.inputValue()).toBe('rejected');

    await page().goto(`${org}/audit`);
    const target = page().getByRole('form', { name: 'Filter the audit log' }).locator('input').first();
    await target.fill(ids.agent!);
    await press('Filter', `?targetId=${ids.agent}`);
    await press('Clear', '');
    expect(await target.inputValue()).toBe('');
    // Clear with no filter applied (the address stays): what was typed is cleared too.
    await target.fill('typed');
    await page().getByRole('button', { name: 'Clear', exact: true }).press('Enter');
    await expect.poll(() => target.inputValue()).toBe('');
    expect(await focused()).toBe('button Clear');
  });

  it('gives the keyboard back to a button disabled while its request is in flight', async () => {
    await page().goto(`/orgs/${t.orgId}/settings`);
    // The request held until the button is seen disabled: the keyboard is off it meanwhile.
    let answer: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (answer = resolve));
    await page().route(`**/v1/orgs/${t.orgId}`, async (route) => {
      if (route.request().method() !== 'PATCH') return route.continue();
      await held;
      return route.continue();
    });
    try {
      const save = page().getByRole('button', { name: 'Save retention', exact: true });
      await save.focus();
      await page().keyboard.press('Enter');
      await expect.poll(() => save.isDisabled()).toBe(true);
      answer();
      await page()
        .getByRole('status')
        .getByText(/^Saved/)
        .waitFor();
      await expect.poll(focused).toBe('button Save retention');
    } finally {
      answer();
      await page().unrouteAll();
    }
  });

  it("holds at a phone's 320 px: no page scrolls sideways, wide tables scroll in their box", async () => {
    const org = `/orgs/${t.orgId}`;
    await page().setViewportSize({ width: 320, height: 800 });
    // How far the page scrolls sideways, and what sticks out of it (outside a box that scrolls).
    const overflow = () =>
      page().evaluate(() => {
        type El = { tagName: string; closest(s: string): unknown; getBoundingClientRect(): { right: number } };
        const doc = (
          globalThis as unknown as {
            document: {
              documentElement: { scrollWidth: number; clientWidth: number };
              querySelectorAll(s: string): El[];
            };
          }
        ).document;
        const root = doc.documentElement;
        const out = [...doc.querySelectorAll('main *')]
          .filter((el) => el.getBoundingClientRect().right > root.clientWidth + 0.5 && !el.closest('.table-scroll'))
          .map((el) => el.tagName.toLowerCase());
        return { by: root.scrollWidth - root.clientWidth, out: out.slice(0, 5) };
      });
    try {
      // A webhook's address in a sentence; then the pages of wide tables.
      for (const [path, heading] of [
        [`${org}/triggers/${ids.trigger}`, 'nightly'],
        [`${org}/triggers/${ids.fleet}`, 'fleet-wide'],
        [`${org}/batches`, 'Batches'],
        [`/api/batches/${ids.batch}`, /^Batch #1/],
        [`${org}/apps/${ids.app}`, 'kiosk'],
      ] as const) {
        await page().goto(path);
        await page().getByRole('heading', { name: heading, level: 1 }).waitFor();
        // The webhook's page has no job yet: its address is what may stick out.
        const drawn = path.endsWith(ids.trigger!)
          ? page().getByRole('heading', { name: 'Calling it' })
          : page().getByRole('table').first();
        await drawn.waitFor();
        expect(await overflow(), `sideways overflow of ${path} at 320 px`).toEqual({ by: 0, out: [] });
      }
    } finally {
      await page().setViewportSize({ width: 1280, height: 800 });
    }
  });

  it("gives the keyboard to a new page's heading, once it is drawn", async () => {
    const org = `/orgs/${t.orgId}`;
    await page().goto(`${org}/jobs`);
    await page().getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    // A link of the header, pressed with the keyboard: the keyboard goes to the Triggers heading,
    // and the next Tab to the page's first stop, not back to the top of the header.
    await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Triggers' }).focus();
    await page().keyboard.press('Enter');
    await expect.poll(focused).toBe('h1 Triggers');
    await page().keyboard.press('Tab');
    const inMain = () =>
      page().evaluate(() => {
        type El = { closest(s: string): unknown };
        const doc = (globalThis as unknown as { document: { activeElement: El } }).document;
        return doc.activeElement.closest('main') !== null;
      });
    expect(await inMain()).toBe(true);
    // A page that reads its data first: its heading gets the keyboard once drawn.
    await page().getByRole('link', { name: 'nightly', exact: true }).focus();
    await page().keyboard.press('Enter');
    await expect.poll(focused).toBe('h1 nightly');
    // Back, by the browser.
    await page().goBack();
    await expect.poll(focused).toBe('h1 Triggers');
    // (A new search of the same page keeps the keyboard where it was: Filter and Clear, above.)
  });
});
