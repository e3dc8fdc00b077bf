import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAgentCli } from '../helpers/agent-cli.js';
import {
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
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';
import { enrollTestAgent } from '../helpers/agent.js';
import { createTestJob } from '../helpers/jobs.js';
import { eventually } from '../helpers/poll.js';
import { AGENT_DIRECTORY_REFRESH_MS, JOBS_REFRESH_MS, LIVE_REFRESH_MS } from '../../dashboard/src/api/refresh.js';
import {
  labelsOf,
  rebaseLabels,
  newRow,
  rowProblems,
  rowsOf,
  rowsProblem,
  serverRowProblems,
} from '../../dashboard/src/components/label-rows.js';

/**
 * The dashboard in a real Chromium against a real coordinator and a real agent, driven as a
 * person does (by label and role): sign in, the first-run page, enrolling an agent with the
 * command the page shows, the Agents page, renaming, labels and the selector filter, a member's
 * view, signing out, and a session that ends while a form is open. Every page is checked with axe-core and for CSP violations.
 */

const HELLO = fs.readFileSync(new URL('../../agent/examples/workflows/hello.yaml', import.meta.url), 'utf8');

describe.skipIf(!CHROMIUM)('the dashboard in a browser', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let member: TestPage | undefined;
  let daemon: DaemonProcess | undefined;
  let stateDir: string;

  beforeAll(async () => {
    t = await startTestCoordinator();
    browser = await launchBrowser();
    // Its refreshes come when a test moves its clock (the home page's counts, a background read).
    owner = await openPage(browser, t.url, { clock: true });
  }, 60_000);
  afterAll(async () => {
    await stopDaemonProcess(daemon);
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page, member?.page]);

  const page = (): Page => owner.page;
  const signIn = async (p: Page, email: string, password: string) => {
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  };
  const alertText = async (p: Page) => {
    const alert = p.getByRole('alert');
    await alert.waitFor();
    return alert.innerText();
  };

  it('sends a visitor to sign in, and says in plain words why a sign-in is refused', async () => {
    await page().goto('/');
    await page().waitForURL('**/login');
    await page().getByRole('heading', { name: 'Sign in to Drover' }).waitFor();
    await expectAccessible(page(), 'the sign-in page');
    await docScreenshot(page(), 'sign-in');

    await signIn(page(), OWNER_EMAIL, 'not the password');
    expect(await alertText(page())).toContain('Wrong email or password');

    // Repeated failures lock an account (1 s, then 2, 4 ...): the page says so, with the wait.
    let text = '';
    for (let attempt = 0; attempt < 12 && !text.includes('locked'); attempt++) {
      await signIn(page(), 'nobody@example.test', 'wrong password');
      await page().getByRole('button', { name: 'Sign in' }).waitFor({ state: 'visible' });
      await expect.poll(() => page().getByRole('button', { name: 'Sign in' }).isEnabled()).toBe(true);
      text = await alertText(page());
    }
    expect(text).toMatch(/Sign-in is locked for now after too many failed attempts\. Try again in \d+ seconds?\./);
  });

  it('signs in and lands on the first-run page of an organization without agents', async () => {
    await signIn(page(), OWNER_EMAIL, OWNER_PASSWORD);
    await page().getByRole('heading', { name: 'Welcome to acme' }).waitFor();
    expect(page().url()).toBe(`${t.url}/orgs/${t.orgId}`);
    const banner = page().getByRole('banner');
    expect(await banner.innerText()).toContain(`${OWNER_EMAIL} (owner)`);
    expect(await banner.textContent()).toContain(`Signed in as ${OWNER_EMAIL} (owner)`); // "Signed in as" for screen readers
    expect(await page().getByLabel('Organization').inputValue()).toBe(t.orgId);
    await expectAccessible(page(), 'the first-run page');
  });

  it('creates an enrollment token and enrolls a real agent with the command the page shows', async () => {
    await page().getByLabel('Label (optional)').fill('edge machines');
    await page().getByRole('button', { name: 'Create enrollment token' }).click();
    const command = await page().getByLabel('Install and enroll command').innerText();
    await docScreenshot(page(), 'first-run');
    const lines = command.split('\n');
    expect(lines[0]).toBe('sudo install -m 755 drover-agent /usr/local/bin/drover-agent');
    expect(lines[2]).toBe('drover-agent run');
    const enroll = lines[1]!.split(' ');
    expect(enroll.slice(0, 4)).toEqual(['drover-agent', 'enroll', '--url', t.url]);
    expect(enroll[4]).toBe('--token');
    expect(enroll[5]).toMatch(/^drve_/);

    stateDir = path.join(makeTempDir('drover-browser-agent-'), 'state');
    const run = await runAgentCli([...enroll.slice(1), '--name', 'edge-01', '--state-dir', stateDir]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('Enrolled as agent');
    writeWorkflowFile(stateDir, 'hello', HELLO);
    daemon = startDaemonProcess(stateDir);
  });

  it('shows the agent connected, with its machine and its workflows with their params', async () => {
    await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click();
    await page().getByRole('heading', { name: 'Agents' }).waitFor();
    // Once the agent connected and reported its workflow, the list's next refresh (its clock moved
    // on) shows it.
    await eventually(
      async () => {
        const agents = (await t.owner.get<{ status: string }[]>(`/orgs/${t.orgId}/agents`)).body;
        const workflows = (await t.owner.get<unknown[]>(`/orgs/${t.orgId}/workflows`)).body;
        return agents[0]?.status === 'connected' && workflows.length === 1;
      },
      20_000,
      'the agent to connect and report its workflow',
    );
    await page().clock.runFor(LIVE_REFRESH_MS);
    const row = page().getByRole('row', { name: 'edge-01' });
    await row.getByText('connected', { exact: true }).waitFor();
    await row.getByText('who: string, default "world"', { exact: false }).waitFor();
    const text = await row.innerText();
    expect(text).toContain('last seen');
    expect(text).toMatch(/agent \d+\.\d+\.\d+/);
    expect(text).toContain('hello');
    await row.getByRole('button', { name: 'Revoke edge-01' }).waitFor(); // an owner may revoke
    await expectAccessible(page(), 'the Agents page');
    await docScreenshot(page(), 'agents');
  });

  it('renames the agent, saying a refusal once', async () => {
    await page().getByRole('button', { name: 'Rename edge-01' }).click();
    // The API's message already says its one detail: the reason is not listed a second time.
    await page().getByLabel('New name for edge-01').fill('   ');
    await page().getByRole('button', { name: 'Save' }).click();
    const refusal = await alertText(page());
    expect(refusal.match(/must not be blank/g), refusal).toHaveLength(1);
    await page().getByLabel('New name for edge-01').fill('edge-lab-01');
    await page().getByRole('button', { name: 'Save' }).click();
    await page().getByRole('row', { name: 'edge-lab-01' }).waitFor();
    const agents = await t.owner.get(`/orgs/${t.orgId}/agents`);
    expect(agents.body.map((a: { name: string }) => a.name)).toEqual(['edge-lab-01']);
  });

  it('shows the fleet at a glance on the home page, every count leading to its list, filtered', async () => {
    await page().getByRole('link', { name: 'Drover home' }).click();
    await page().getByRole('heading', { name: 'acme', level: 1 }).waitFor();
    const panel = (name: string) => page().getByRole('region', { name });
    await panel('Recent failures').getByText('No job has failed or timed out.').waitFor();
    await panel('Running jobs').getByText('No job is running.').waitFor();
    await panel('Rollouts in progress').getByText('No rollout is in progress.').waitFor();
    await panel('Next scheduled runs').getByText('No schedule is enabled.').waitFor();
    const count = (region: string, name: string) => panel(region).getByRole('link', { name, exact: true });
    await count('Agents', '1 connected').waitFor();

    // Agents in each status: one whose connection dropped, one never connected, one revoked.
    const away = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-away' });
    const seen = new Date(Date.now() - 5 * 60_000).toISOString();
    await t.coordinator.ctx.repos.agents.markConnected(away.agentId, seen);
    expect(await t.coordinator.ctx.repos.agents.markDisconnected(away.agentId, seen, seen)).toBe(true);
    const never = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-new' });
    const gone = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-gone' });
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${gone.agentId}`)).status).toBe(200);
    // Jobs of the away agent's trigger in every outcome, one running; and a schedule.
    const trigger = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
      body: { name: 'nightly build', agentId: away.agentId, scopeType: 'agent', responseMode: 'async' },
    });
    expect(trigger.status).toBe(201);
    const schedule = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'weekly backup',
        agentId: away.agentId,
        scopeType: 'workflow',
        workflowName: 'backup',
        responseMode: 'async',
        type: 'cron',
        cronExpression: '0 3 * * 0',
      },
    });
    expect(schedule.status, schedule.text).toBe(201);
    const job = async (workflowName: string, status: string) => {
      const { id } = await createTestJob(t, away, { workflowName, triggerId: trigger.body.id }, { notify: false });
      const at = new Date().toISOString();
      const ended = status !== 'running';
      await t.sql.run(
        'UPDATE jobs SET status = ?, started_at = ?, finished_at = ?, exit_code = ? WHERE id = ?',
        status,
        at,
        ended ? at : null,
        ended ? 1 : null,
        id,
      );
    };
    await job('build', 'failed');
    await job('test', 'timed_out');
    await job('deploy', 'running');
    await job('lint', 'success');
    await job('lint', 'success');
    await job('package', 'cancelled');

    // The counts follow within a refresh (every 3 seconds).
    await page().clock.runFor(JOBS_REFRESH_MS);
    await count('Agents', '1 disconnected').waitFor();
    for (const words of ['1 connected', '1 never connected', '1 revoked']) await count('Agents', words).waitFor();
    const jobs = 'Jobs, last 24 hours';
    for (const words of [
      '6 jobs',
      '2 succeeded',
      '1 failed',
      '1 timed out',
      '1 cancelled',
      '0 rejected',
      '1 running',
    ]) {
      await count(jobs, words).waitFor();
    }
    const chart = panel(jobs).getByRole('img');
    expect(await chart.getAttribute('aria-label')).toBe(
      'Jobs created in the last 24 hours, an hour at a time: 6 jobs, 2 succeeded, 1 failed, 1 timed out, 1 cancelled, 0 rejected. The table below gives each hour.',
    );
    expect(await chart.locator('canvas').count()).toBe(1); // uPlot drew it, under the page's CSP
    const failures = panel('Recent failures');
    await failures.getByRole('link', { name: /^#\d+ test$/ }).waitFor();
    expect(await failures.innerText()).toMatch(/#\d+ test\s+timed out[\s\S]*#\d+ build\s+failed/); // newest first
    expect(await failures.innerText()).toContain('nightly build · edge-away · ended');
    await panel('Running jobs')
      .getByRole('link', { name: /^#\d+ deploy$/ })
      .waitFor();
    await panel('Next scheduled runs').getByRole('link', { name: 'weekly backup' }).waitFor();
    // The chart's counts as a table: this hour's row, each count a link to its jobs.
    await panel(jobs).getByText('The jobs of each hour, as a table').click();
    const hours = panel(jobs).getByRole('table');
    expect(await hours.getByRole('row').count()).toBe(25); // the header and 24 hours
    const thisHour = hours.getByRole('row').nth(1);
    expect(await thisHour.getByRole('cell').allInnerTexts()).toEqual(['2', '1', '1', '1', '0']);
    await expectAccessible(page(), 'the home page');
    await docScreenshot(page(), 'home');
    expect(owner.problems).toEqual([]);

    // Each count leads to its list, filtered as it counts.
    await count(jobs, '1 failed').click();
    await page().waitForURL(
      (url) => url.pathname === `/orgs/${t.orgId}/jobs` && url.searchParams.get('status') === 'failed',
    );
    expect(new URL(page().url()).searchParams.get('createdAfter')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z$/);
    await page().getByRole('row', { name: /build/ }).waitFor();
    expect(await page().getByRole('row').count()).toBe(2); // the header and the one job
    await page().goBack();
    await panel(jobs).getByText('The jobs of each hour, as a table').click(); // drawn anew, closed
    await thisHour.getByRole('link', { name: /^2 succeeded at / }).click();
    await page().waitForURL(
      (url) => url.searchParams.get('status') === 'success' && url.searchParams.has('createdBefore'),
    );
    await expect.poll(() => page().getByRole('row', { name: /lint/ }).count()).toBe(2);
    await page().goBack();
    await count(jobs, '1 running').click();
    await page().waitForURL(`**/orgs/${t.orgId}/jobs?status=running`);
    await page().goBack();
    await count('Agents', '1 disconnected').click();
    await page().waitForURL(`**/orgs/${t.orgId}/agents?status=disconnected`);
    await page().getByRole('row', { name: 'edge-away' }).waitFor();
    expect(await page().getByRole('row').count()).toBe(2); // the header and the away agent
    expect(await page().getByLabel('Status').inputValue()).toBe('disconnected');
    await page().goBack();
    await count('Agents', '1 never connected').click();
    await page().waitForURL(`**/orgs/${t.orgId}/agents?status=pending`);
    await page().getByRole('row', { name: 'edge-new' }).waitFor();
    // A status the page does not know (an old link, a typo) filters nothing, as "any" says.
    await page().goto(`/orgs/${t.orgId}/agents?status=offline`);
    await page().getByRole('row', { name: 'edge-away' }).waitFor();
    expect(await page().getByRole('row', { name: 'edge-new' }).count()).toBe(1);
    expect(await page().getByLabel('Status').inputValue()).toBe('');
    // The pages below know one agent (and its trigger, without a schedule).
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${away.agentId}`)).status).toBe(200);
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${never.agentId}`)).status).toBe(200);
    expect((await t.owner.delete(`/orgs/${t.orgId}/triggers/${schedule.body.id}`)).status).toBe(200);
  }, 60_000);

  it('follows a dark system theme: dark colours, and every text still readable (axe contrast)', async () => {
    await page().goto(`/orgs/${t.orgId}`);
    await page().getByRole('heading', { name: 'acme', level: 1 }).waitFor();
    const background = () =>
      page().evaluate(() => {
        const doc = (globalThis as unknown as { document: { documentElement: object } }).document;
        const view = globalThis as unknown as {
          getComputedStyle(el: object): { backgroundColor: string; color: string };
        };
        const style = view.getComputedStyle(doc.documentElement);
        return `${style.backgroundColor} ${style.color}`;
      });
    expect(await background()).toBe('rgb(246, 247, 249) rgb(27, 31, 36)');
    await page().emulateMedia({ colorScheme: 'dark' });
    await expect.poll(background).toBe('rgb(15, 20, 26) rgb(230, 233, 237)');
    await page().getByRole('region', { name: 'Jobs, last 24 hours' }).getByRole('img').locator('canvas').waitFor();
    await expectAccessible(page(), 'the home page in dark mode');
    await docScreenshot(page(), 'home-dark');
    const job = (await t.owner.get<{ id: string }[]>(`/orgs/${t.orgId}/jobs?status=failed&limit=1`)).body[0]!;
    for (const [path, heading] of [
      [`/orgs/${t.orgId}/jobs`, 'Jobs'],
      [`/api/jobs/${job.id}`, /^Job #\d+/],
      [`/orgs/${t.orgId}/agents`, 'Agents'],
    ] as const) {
      await page().goto(path);
      await page().getByRole('heading', { name: heading, level: 1 }).waitFor();
      if (typeof heading === 'string') await page().getByRole('row').nth(1).waitFor();
      await expectAccessible(page(), `${path} in dark mode`);
    }
    await page().emulateMedia({ colorScheme: 'light' });
    expect(owner.problems).toEqual([]);
  }, 60_000);

  it("holds its layout at a phone's width: no page scrolls sideways, tables scroll in their box", async () => {
    const job = (await t.owner.get<{ id: string }[]>(`/orgs/${t.orgId}/jobs?limit=1`)).body[0]!;
    await page().setViewportSize({ width: 375, height: 800 });
    // How far the page scrolls sideways, and what sticks out of it (outside a box that scrolls).
    const overflow = () =>
      page().evaluate(() => {
        type El = {
          tagName: string;
          className: string;
          closest(s: string): unknown;
          getBoundingClientRect(): { right: number };
        };
        const doc = (
          globalThis as unknown as {
            document: {
              documentElement: { scrollWidth: number; clientWidth: number };
              querySelectorAll(s: string): El[];
            };
          }
        ).document;
        const root = doc.documentElement;
        const out = [...doc.querySelectorAll('body *')]
          .filter((el) => el.getBoundingClientRect().right > root.clientWidth + 0.5 && !el.closest('.table-scroll'))
          .map((el) => `${el.tagName.toLowerCase()}.${el.className}`);
        return { by: root.scrollWidth - root.clientWidth, out: out.slice(0, 5) };
      });
    try {
      for (const [path, heading] of [
        [`/orgs/${t.orgId}`, 'acme'],
        [`/orgs/${t.orgId}/jobs`, 'Jobs'],
        [`/api/jobs/${job.id}`, /^Job #\d+/],
        [`/orgs/${t.orgId}/agents`, 'Agents'],
      ] as const) {
        await page().goto(path);
        await page().getByRole('heading', { name: heading, level: 1 }).waitFor();
        await page().waitForLoadState('networkidle');
        expect(await overflow(), `sideways overflow of ${path} at 375 px`).toEqual({ by: 0, out: [] });
        // The navigation wraps: every link drawn inside the page.
        for (const link of await page().getByRole('navigation', { name: 'Main' }).getByRole('link').all()) {
          const box = (await link.boundingBox())!;
          expect(box.x + box.width, `${await link.innerText()} on ${path}`).toBeLessThanOrEqual(375);
        }
        if (path === `/orgs/${t.orgId}`) {
          await expectAccessible(page(), 'the home page at 375 px');
          await docScreenshot(page(), 'home-phone');
        }
      }
    } finally {
      await page().setViewportSize({ width: 1280, height: 800 });
    }
  });

  it('keeps its header on one line at 1,280 and 1,400 pixels, with a link to the API reference and an icon', async () => {
    const header = page().getByRole('banner');
    const expectOneLine = async (orgId: string, width: number, p = page()) => {
      const banner = p.getByRole('banner');
      await p.goto(`/orgs/${orgId}/agents`);
      await p.getByRole('heading', { name: 'Agents' }).waitFor();
      const box = (await banner.boundingBox())!;
      // One line: the height of its tallest control (the sign-out button) and its padding.
      expect(box.height, `the header's height at ${width} px`).toBeLessThan(60);
      const nav = p.getByRole('navigation', { name: 'Main' });
      // Every link is drawn whole, none scrolled out of the navigation: their right edges read in
      // one call to the page (a call per link took most of this test on a busy machine).
      const bounds = (await nav.boundingBox())!;
      const links = await nav
        .getByRole('link')
        .evaluateAll((all) => all.map((l) => ({ text: l.textContent, right: l.getBoundingClientRect().right })));
      expect(links).toHaveLength(11);
      for (const link of links) {
        expect(link.right, `${link.text} at ${width} px`).toBeLessThanOrEqual(bounds.x + bounds.width + 1);
      }
      expect(await banner.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    };
    for (const width of [1280, 1400]) {
      await page().setViewportSize({ width, height: 800 });
      await expectOneLine(t.orgId, width);
    }
    await page().setViewportSize({ width: 1280, height: 800 });
    // A long organization name gives way, not the navigation (it squeezed "Audit log" and
    // "Settings" out of view): it ends in an ellipsis, and the whole of it is the switcher's title.
    const name = `The northern regional field operations ${'and maintenance '.repeat(4)}group`;
    const long = await t.owner.post<{ id: string }>('/orgs', { body: { name } });
    expect(long.status, long.text).toBe(201);
    await expectOneLine(long.body.id, 1280);
    const switcher = header.getByLabel('Organization');
    expect(await switcher.getAttribute('title')).toBe(name);
    expect(await switcher.evaluate((el) => el.ownerDocument.defaultView!.getComputedStyle(el).textOverflow)).toBe(
      'ellipsis',
    );
    // So does a long email (it squeezed "Settings" out of view): the whole of it is the link's title.
    const email = 'maximilian.alexander.hohenzollern-sigmaringen.field-operations@northern-maintenance.example.com';
    await addUser(t.owner, t.orgId, email, 'owner');
    const longEmail = await openPage(browser, t.url);
    try {
      await longEmail.page.goto('/login');
      await signIn(longEmail.page, email, MEMBER_PASSWORD);
      await longEmail.page.waitForURL(`**/orgs/${t.orgId}`);
      await expectOneLine(t.orgId, 1280, longEmail.page);
      const who = longEmail.page.getByRole('banner').getByRole('link', { name: /your account/ });
      expect(await who.getAttribute('title')).toBe(`Signed in as ${email} (owner): your account`);
    } finally {
      await longEmail.context.close();
    }
    // The API reference, served by the coordinator beside the dashboard.
    const docs = page().getByRole('contentinfo').getByRole('link', { name: 'API reference' });
    expect(await docs.getAttribute('href')).toBe('/docs');
    const reference = await page().request.get('/docs');
    expect(reference.status()).toBe(200);
    // The icon the page names, and /favicon.ico: no 404 on any page.
    const icon = await page().locator('link[rel="icon"]').getAttribute('href');
    expect((await page().request.get(icon!)).status()).toBe(200);
    expect((await page().request.get('/favicon.ico')).status()).toBe(200);
  });

  it("shows agents' labels, edits an operator's, and filters the list by a selector kept in the address", async () => {
    // Two agents that report labels of their own, as an agent does when it connects.
    const report = async (hostname: string, labels: Record<string, string>) => {
      const agent = await enrollTestAgent(t.owner, t.orgId, { hostname });
      const res = await agent.request('PUT', '/v1/agent/labels', { labels: { ...labels, os: 'linux' } });
      expect(res.status, res.text).toBe(200);
      return agent;
    };
    const berlin = await report('edge-berlin', { site: 'berlin', role: 'gateway', arch: 'x64' });
    await report('edge-munich', { site: 'munich', arch: 'arm64' });
    const total = (await t.owner.get(`/orgs/${t.orgId}/agents`)).body.length;

    // The list: each agent's labels as chips, the agent's own said to be reported.
    await page().goto(`/orgs/${t.orgId}/agents`);
    const row = (name: string) => page().getByRole('row', { name });
    const chip = (name: string, text: string) => row(name).getByRole('listitem').filter({ hasText: text });
    await chip('edge-berlin', 'site=berlin').waitFor();
    expect(await chip('edge-berlin', 'site=berlin').getAttribute('title')).toBe('site=berlin: reported by the agent');
    expect(await row('edge-berlin').getByRole('cell').nth(2).locator('code').allInnerTexts()).toEqual([
      'arch=x64',
      'os=linux',
      'role=gateway',
      'site=berlin',
    ]);
    expect(await chip('edge-munich', 'arch=arm64').textContent()).toBe('arch=arm64, reported by the agent');

    // The agent's page: what it reports, what operators set, and what it carries.
    await row('edge-berlin').getByRole('link', { name: 'edge-berlin' }).click();
    await page().waitForURL(`**/orgs/${t.orgId}/agents/${berlin.agentId}`);
    await page().getByRole('heading', { name: 'edge-berlin', level: 1 }).waitFor();
    const region = (name: string) => page().getByRole('region', { name });
    expect(await region('Reported by the agent').innerText()).toContain('site=berlin');
    expect(await region('Set by operators').innerText()).toContain('none set');
    await expectAccessible(page(), "an agent's page");

    // The form opens on one empty row; Escape closes it and the keyboard is back on its button.
    const edit = page().getByRole('button', { name: 'Edit labels' });
    await edit.click();
    const form = page().getByRole('form', { name: "Edit the operators' labels of edge-berlin" });
    const label = (n: number) => form.getByRole('group', { name: `Label ${n}` });
    await label(1).getByLabel('Key').press('Escape');
    await edit.waitFor();
    expect(await edit.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);

    // Checked in the browser with the shared rules: each reason under its row, the first one focused.
    await edit.click();
    await label(1).getByLabel('Key').fill('Site');
    await label(1).getByLabel('Value').fill('munich');
    await form.getByRole('button', { name: 'Add a label' }).click();
    expect(
      await label(2)
        .getByLabel('Key')
        .evaluate((el) => el === el.ownerDocument.activeElement),
    ).toBe(true);
    await label(2).getByLabel('Key').fill('rack');
    await label(2).getByLabel('Value').fill('a 1');
    await form.getByRole('button', { name: 'Add a label' }).click();
    await label(3).getByLabel('Key').fill('rack');
    await form.getByRole('button', { name: 'Save labels' }).click();
    expect(await form.getByRole('alert').innerText()).toBe('Some labels need a change; the reason is under each.');
    const key1 = label(1).getByLabel('Key');
    expect(await key1.getAttribute('aria-invalid')).toBe('true');
    expect(await key1.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    const problem1 = await form.locator(`#${await key1.getAttribute('aria-describedby')}`).innerText();
    expect(problem1).toContain('Key: "Site" is not a label key: 1 to 63 lowercase letters');
    expect(await form.getByRole('listitem').nth(1).innerText()).toContain(
      `Value: "a 1" is not a label value: up to 63 letters, digits, '.', '_' or '-'`,
    );
    expect(await form.getByRole('listitem').nth(2).innerText()).toContain('Key: the key rack is given twice');
    expect(await page().getByRole('alert').count()).toBe(1);
    // Fixed as typed; the third row removed; saved with the keyboard.
    await key1.fill('site');
    await label(2).getByLabel('Value').fill('a1');
    await form.getByRole('button', { name: 'Remove label 3' }).click();
    expect(await form.getByRole('alert').count()).toBe(0);
    await label(2).getByLabel('Value').press('Enter');
    await page().getByRole('status').filter({ hasText: 'Labels saved.' }).waitFor();
    expect(await region('Set by operators').locator('code').allInnerTexts()).toEqual(['rack=a1', 'site=munich']);
    const replaced = region('Reported by the agent').getByRole('listitem').filter({ hasText: 'site=berlin' });
    expect(await replaced.getAttribute('title')).toBe("site=berlin: reported by the agent, replaced by an operator's");
    expect(await page().getByText("An operator's site=munich replaces the agent's site=berlin.").count()).toBe(1);
    expect((await t.owner.get(`/orgs/${t.orgId}/agents/${berlin.agentId}`)).body.operatorLabels).toEqual({
      rack: 'a1',
      site: 'munich',
    });
    await docScreenshot(page(), 'agent-labels');

    // The list shows the operator's labels as theirs.
    await page().getByRole('link', { name: 'All agents' }).click();
    await chip('edge-berlin', 'site=munich').waitFor();
    const operatorChip = chip('edge-berlin', 'site=munich');
    expect(await operatorChip.getAttribute('title')).toBe('site=munich: set by an operator');
    expect(await operatorChip.textContent()).toBe('site=munich, set by an operator');
    // Drawn apart from the agent's own, by more than colour: a thicker outline and a mark before it.
    const look = (l: typeof operatorChip) =>
      l.evaluate((el) => {
        const view = el.ownerDocument.defaultView!;
        return `${view.getComputedStyle(el).borderTopWidth} ${view.getComputedStyle(el, '::before').content}`;
      });
    expect(await look(operatorChip)).toMatch(/^2px "✎"/);
    expect(await look(chip('edge-berlin', 'role=gateway'))).toBe('1px none');

    // A selector typed filters the list as it goes; one that does not parse says where, and marks it.
    const selector = page().getByLabel('Selector');
    const count = page().getByRole('search', { name: 'Filter the agents' }).getByRole('status');
    expect(await count.innerText()).toBe(`${total} agents.`);
    const entries = () => selector.evaluate((el) => el.ownerDocument.defaultView!.history.length);
    const before = await entries();
    await selector.pressSequentially('site in (munich');
    const problem = page().locator('#agents-selector-error');
    expect(await problem.innerText()).toBe("Not a label selector: at position 15: expected ',' or ')', found the end");
    expect(await selector.getAttribute('aria-invalid')).toBe('true');
    expect(await selector.getAttribute('aria-describedby')).toContain('agents-selector-error');
    expect(await page().locator('.selector-mark mark').count()).toBe(1);
    await selector.press(')');
    await expect.poll(() => count.innerText()).toBe(`2 of ${total} agents match.`);
    expect(await selector.getAttribute('aria-invalid')).toBeNull();
    expect(await row('edge-munich').count()).toBe(1);
    expect(await row('edge-lab-01').count()).toBe(0);
    await selector.fill('site=munich,rack');
    await expect.poll(() => count.innerText()).toBe(`1 of ${total} agents match.`);
    expect(await row('edge-berlin').count()).toBe(1);
    expect(await row('edge-munich').count()).toBe(0);
    await expectAccessible(page(), 'the Agents page filtered by a selector');
    await docScreenshot(page(), 'agents-selector');

    // The address keeps the selector (typing adds no history entry): the view can be linked, and survives a reload.
    expect(new URL(page().url()).searchParams.get('selector')).toBe('site=munich,rack');
    expect(await entries()).toBe(before);
    await page().reload();
    await row('edge-berlin').waitFor();
    expect(await selector.inputValue()).toBe('site=munich,rack');
    // The count of every agent is read beside the page of those that match.
    await expect.poll(() => count.innerText()).toBe(`1 of ${total} agents match.`);
    // A half-typed selector keeps the last one that parsed; the navigation's link shows every agent again.
    await selector.press('End');
    await selector.pressSequentially(',');
    await problem.waitFor();
    expect(await problem.innerText()).toContain('at position 17: expected a label key, found the end');
    expect(await count.innerText()).toBe(`1 of ${total} agents match the last selector that parsed.`);
    await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click();
    await expect.poll(() => selector.inputValue()).toBe('');
    await expect.poll(() => count.innerText()).toBe(`${total} agents.`);
    expect(page().url()).toBe(`${t.url}/orgs/${t.orgId}/agents`);
    expect(owner.problems).toEqual([]);
  });

  it('hides owner-only actions from a member, who may still rename', async () => {
    await addUser(t.owner, t.orgId, 'member@example.test', 'member');
    member = await openPage(browser, t.url);
    await member.page.goto(`/orgs/${t.orgId}/agents`);
    await member.page.waitForURL('**/login?next=*');
    expect(await member.page.getByText('Your session ended').count()).toBe(0); // a first visit, not an expiry
    await signIn(member.page, 'member@example.test', MEMBER_PASSWORD);
    await member.page.waitForURL(`**/orgs/${t.orgId}/agents`); // back where the member was going
    const row = member.page.getByRole('row', { name: 'edge-lab-01' });
    await row.getByRole('button', { name: 'Rename edge-lab-01' }).waitFor();
    expect(await row.getByRole('button', { name: /Revoke/ }).count()).toBe(0);
    // The role comes with the organizations, which the header may read after the agents.
    await expect.poll(() => member!.page.getByRole('banner').innerText()).toContain('(member)');
    await expectAccessible(member.page, "a member's Agents page");
  });

  it('signs out: the cookie is gone and a page asks to sign in again', async () => {
    await member!.page.getByRole('button', { name: 'Sign out' }).click();
    await member!.page.waitForURL('**/login');
    const cookies = await member!.context.cookies();
    expect(cookies.filter((c) => c.name === 'drover_session')).toEqual([]);
    await member!.page.goto(`/orgs/${t.orgId}/agents`);
    await member!.page.waitForURL('**/login?next=*');
    expect(member!.problems).toEqual([]);
  });

  it('keeps an open form when a background read meets an ended session, and returns to sign-in on sending it', async () => {
    const cookie = (await owner.context.cookies()).find((c) => c.name === 'drover_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    const formPath = `/orgs/${t.orgId}/triggers/new`;
    await page().goto(formPath);
    await page().getByRole('heading', { name: 'New trigger' }).waitFor();
    await page().getByLabel('Name', { exact: true }).fill('typed before the session ended');
    // Signed out elsewhere (as another tab would): the session this browser holds ends.
    const out = await t.api.post('/auth/logout', { token: cookie!.value });
    expect(out.status, out.text).toBeLessThan(300);
    // The form reads the agents and their workflows again each minute: that read is refused, and the page stays.
    await page().clock.runFor(AGENT_DIRECTORY_REFRESH_MS);
    const banner = page().getByRole('alert').filter({ hasText: 'Your session ended.' });
    await banner.waitFor();
    expect(page().url()).toBe(`${t.url}${formPath}`);
    expect(await page().getByLabel('Name', { exact: true }).inputValue()).toBe('typed before the session ended');
    const link = banner.getByRole('link', { name: /^Sign in again \(opens the sign-in page/ });
    expect(await link.getAttribute('href')).toBe(`/login?reason=expired&next=${encodeURIComponent(formPath)}`);
    await expectAccessible(page(), 'a form under the ended-session banner');

    // Sending the form is something the user did: its 401 goes to sign-in, back to the form after.
    await page().getByRole('button', { name: 'Create trigger' }).click();
    await page().waitForURL('**/login?reason=expired&next=*', { timeout: 20_000 });
    expect(new URL(page().url()).searchParams.get('next')).toBe(formPath);
    await page().getByText('Your session ended; sign in again to continue.').waitFor();
    expect(owner.problems).toEqual([]);
  });
});

// The rows of the agent page's Edit labels form, without a browser: what the coordinator refuses
// (the browser checks the same rules first, so only a coordinator of other rules shows this).
describe("the rows of an agent's Edit labels form", () => {
  it('sends the labels the rows say, trimmed, leaving blank rows out', () => {
    const rows = [newRow(' site ', ' munich '), newRow('', ''), newRow('empty', '')];
    expect(labelsOf(rows)).toEqual({ site: 'munich', empty: '' });
    expect(rowProblems(rows).size).toBe(0);
    expect(rowsOf({ site: 'x', arch: 'y' }).map((r) => r.key)).toEqual(['arch', 'site']);
    expect(rowsProblem(Array.from({ length: 33 }, (_, i) => newRow(`k${i}`, 'v')))).toBe('at most 32 labels, got 33');
  });

  it('makes the changes the rows made to the labels they were made from onto the labels as they are now', () => {
    const base = { rack: 'r1', site: 'munich', old: 'x' };
    const mine = { rack: 'r2', old: 'x', new: 'y' };
    // Another change set tier, removed old and changed site, which the rows removed.
    expect(rebaseLabels(mine, base, { rack: 'r1', site: 'kiel', tier: 'gold' })).toEqual({
      rack: 'r2',
      tier: 'gold',
      new: 'y',
    });
    expect(rebaseLabels(base, base, { tier: 'gold' })).toEqual({ tier: 'gold' });
  });

  it("puts each of the coordinator's details on the row of the key it names, the rest above the form", () => {
    const rows = [newRow('site', 'munich'), newRow('rack', 'a1')];
    const { byRow, rest } = serverRowProblems(
      [
        { path: 'body.labels.rack', message: 'not this rack' },
        { path: 'body.labels', message: 'at most 32 labels, got 40' },
        { path: 'body.labels.gone', message: 'a key no row has' },
      ],
      rows,
    );
    expect([...byRow]).toEqual([[rows[1]!.id, { row: 'not this rack' }]]);
    expect(rest.map((d) => d.path)).toEqual(['body.labels', 'body.labels.gone']);
  });
});
