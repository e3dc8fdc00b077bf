import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterEach, expect } from 'vitest';

/**
 * A real Chromium (Debian's package; scripts/lib/test-tools.sh installs it) driven by
 * playwright-core, for the dashboard's browser tests. In CI a missing browser is a failure; on a
 * developer's machine the browser tests are skipped with a message.
 *
 * Chromium's headless shell first (Debian's `chromium-headless-shell`, what Playwright itself runs
 * headless tests in): the same Blink and V8 without the desktop browser around them, the whole
 * browser suite took 22% less CPU in it (170 s against 217 s, 233 s against 268 s of a run on 2
 * cores). `DROVER_CHROMIUM` names another (`/usr/bin/chromium` for the documentation's screenshots).
 */

const CANDIDATES = [
  '/usr/bin/chromium-headless-shell',
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
];
export const CHROMIUM: string | undefined = process.env.DROVER_CHROMIUM ?? CANDIDATES.find((p) => fs.existsSync(p));

if (!CHROMIUM) {
  const message = 'Chromium is missing (apt-get install chromium); the dashboard browser tests are skipped';
  if (process.env.CI) throw new Error(`${message.split(';')[0]}: CI runs the browser tests`);
  console.warn(message);
}

const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** axe-core's minified build, evaluated in the pages checked (expectAccessible). */
const AXE_SOURCE = fs.readFileSync(fileURLToPath(import.meta.resolve('axe-core/axe.min.js')), 'utf8');
const DOC_IMAGES = path.join(REPO, 'docs/images');

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM!,
    headless: true,
    // As root (CI, containers) Chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

export interface TestPage {
  context: BrowserContext;
  page: Page;
  /** Content-Security-Policy violations and uncaught errors the page reported so far. */
  problems: string[];
}

/**
 * A fresh browser context (its own cookies) with one page, watched for CSP violations and errors.
 *
 * `clock`: the page's timers run on Playwright's clock (`page.clock`), installed before the first
 * page opens. Time flows as usual, but a test that waits for the dashboard's periodic refresh
 * (TanStack Query's `refetchInterval`) moves the clock by the interval (`page.clock.runFor`) and
 * has it at once, rather than seconds later; a refresh that is not there still fails the test.
 */
export async function openPage(
  browser: Browser,
  baseURL: string,
  options: { clock?: boolean } = {},
): Promise<TestPage> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 800 } });
  if (options.clock) await context.clock.install();
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  return { context, page, problems };
}

/** Signs in on the dashboard's sign-in page and waits for the organization's home it lands on. */
export async function signIn(page: Page, email: string, password: string, orgId: string): Promise<void> {
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`**/orgs/${orgId}`);
}

/**
 * Checks the page with axe-core: no serious or critical violation. axe is evaluated through
 * the browser's debugging protocol, which the page's CSP (no inline script) does not govern.
 * `ignore` names rules a third-party page breaks by its structure (Swagger UI at /docs).
 */
export async function expectAccessible(page: Page, what: string, ignore: readonly string[] = []): Promise<void> {
  // Once per document: a page the dashboard's router moved on within keeps it. The minified build
  // (654 KB, not axe.source's 1.5 MB): sending and compiling it took 0.36 s a check.
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(AXE_SOURCE);
  // Runs in the page, where `axe` is the global the source above defined (the tests have no DOM types).
  const violations = await page.evaluate(async () => {
    const { axe: inPage, document: doc } = globalThis as unknown as { axe: typeof axe; document: unknown };
    const result = await inPage.run(doc as Parameters<typeof axe.run>[0], { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')),
    }));
  });
  const serious = violations.filter(
    (v) => (v.impact === 'serious' || v.impact === 'critical') && !ignore.includes(v.id),
  );
  expect(serious, `accessibility of ${what}`).toEqual([]);
}

/**
 * Writes the screenshot `docs/images/dashboard-<name>.png` when DROVER_DOCS_SCREENSHOTS=1
 * (docs/dashboard.md shows them); otherwise does nothing.
 */
export async function docScreenshot(page: Page, name: string): Promise<void> {
  if (process.env.DROVER_DOCS_SCREENSHOTS !== '1') return;
  fs.mkdirSync(DOC_IMAGES, { recursive: true });
  await page.screenshot({ path: path.join(DOC_IMAGES, `dashboard-${name}.png`), fullPage: true });
}

/** On a failed test, saves a screenshot of each page given and prints where. */
export function screenshotOnFailure(pages: () => (Page | undefined)[]): void {
  afterEach(async (context) => {
    if (context.task.result?.state !== 'fail') return;
    for (const [i, page] of pages().entries()) {
      if (!page || page.isClosed()) continue;
      const file = path.join(os.tmpdir(), `drover-browser-${Date.now()}-${i}.png`);
      await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      console.error(`screenshot of the failed test "${context.task.name}": ${file}`);
    }
  });
}
