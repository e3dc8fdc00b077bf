import fs from 'node:fs';
import os from 'node:os';
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

/**
 * The dashboard in a real Chromium against a real coordinator and a real agent, driven as a
 * person does (by label and role): sign in, the first-run page, enrolling an agent with the
 * command the page shows, the Agents page, renaming, a member's view, signing out, and a session
 * that expires. Every page is checked with axe-core and for CSP violations.
 */

const HELLO = fs.readFileSync(new URL('../../agent/examples/workflows/hello.yaml', import.meta.url), 'utf8');
const HOUR = 3600_000;

describe.skipIf(!CHROMIUM)('the dashboard in a browser', () => {
  let offset = 0; // the coordinator's clock runs with the real one, moved by `offset` (session expiry)
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let member: TestPage | undefined;
  let daemon: DaemonProcess | undefined;
  let stateDir: string;

  beforeAll(async () => {
    t = await startTestCoordinator({ clock: { now: () => Date.now() + offset } });
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
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
    const row = page().getByRole('row', { name: 'edge-01' });
    await row.getByText('connected', { exact: true }).waitFor({ timeout: 20_000 });
    await row.getByText('who: string, default "world"', { exact: false }).waitFor({ timeout: 20_000 });
    const text = await row.innerText();
    expect(text).toContain('last seen');
    expect(text).toMatch(/agent \d+\.\d+\.\d+/);
    expect(text).toContain('hello');
    await row.getByRole('button', { name: 'Revoke edge-01' }).waitFor(); // an owner may revoke
    await expectAccessible(page(), 'the Agents page');
    await docScreenshot(page(), 'agents');
  });

  it('renames the agent', async () => {
    await page().getByRole('button', { name: 'Rename edge-01' }).click();
    await page().getByLabel('New name for edge-01').fill('edge-lab-01');
    await page().getByRole('button', { name: 'Save' }).click();
    await page().getByRole('row', { name: 'edge-lab-01' }).waitFor();
    const agents = await t.owner.get(`/orgs/${t.orgId}/agents`);
    expect(agents.body.map((a: { name: string }) => a.name)).toEqual(['edge-lab-01']);
  });

  it('shows on the home page what failed, what runs and which agents are offline, each linked to its list', async () => {
    await page().getByRole('link', { name: 'Drover home' }).click();
    await page().getByRole('heading', { name: 'acme', level: 1 }).waitFor();
    const panel = (name: string) => page().getByRole('region', { name });
    await panel('Recent failures').getByText('No job has failed or timed out.').waitFor();
    await panel('Running jobs').getByText('No job is running.').waitFor();
    await panel('Agents offline').getByText('No agent is offline.').waitFor();
    expect(await page().getByText('1 of 1 agent connected.').count()).toBe(1);

    // An agent that lost its connection, and jobs of it: two that failed, one that runs.
    const away = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-away' });
    const seen = new Date(Date.now() + offset - 5 * 60_000).toISOString();
    await t.coordinator.ctx.repos.agents.markConnected(away.agentId, seen);
    expect(await t.coordinator.ctx.repos.agents.markDisconnected(away.agentId, seen, seen)).toBe(true);
    const trigger = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
      body: { name: 'nightly build', agentId: away.agentId, scopeType: 'agent', responseMode: 'async' },
    });
    expect(trigger.status).toBe(201);
    const job = async (workflowName: string, status: string) => {
      const { id } = await createTestJob(t, away, { workflowName, triggerId: trigger.body.id }, { notify: false });
      const at = new Date(Date.now() + offset).toISOString();
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

    // The agents' list refreshes every 5 seconds: the new agent's name comes with it.
    const offline = panel('Agents offline');
    await offline.getByText('edge-away').first().waitFor({ timeout: 10_000 });
    expect(await offline.innerText()).toContain('last seen 5 minutes ago');
    const failures = panel('Recent failures');
    await failures.getByRole('link', { name: /^#\d+ test$/ }).waitFor({ timeout: 10_000 });
    const failureText = await failures.innerText();
    expect(failureText).toMatch(/#\d+ test\s+timed out[\s\S]*#\d+ build\s+failed/); // newest first
    expect(failureText).toContain('nightly build · edge-away');
    await panel('Running jobs')
      .getByRole('link', { name: /^#\d+ deploy$/ })
      .waitFor({ timeout: 10_000 });
    expect(await panel('Running jobs').innerText()).toContain('running for');
    expect(await page().getByText('1 of 2 agents connected.').count()).toBe(1);
    await expectAccessible(page(), 'the home page');
    await docScreenshot(page(), 'home');

    // Each list leads to its page, filtered.
    await failures.getByRole('link', { name: 'All timed-out jobs' }).click();
    await page().waitForURL(`**/orgs/${t.orgId}/jobs?status=timed_out`);
    await page().getByRole('row', { name: /test/ }).waitFor();
    expect(await page().getByRole('row').count()).toBe(2); // the header and the one job
    await page().goBack();
    await panel('Running jobs').getByRole('link', { name: 'All running jobs' }).click();
    await page().waitForURL(`**/orgs/${t.orgId}/jobs?status=running`);
    await page().goBack();
    await panel('Agents offline').getByRole('link', { name: 'All agents' }).click();
    await page().waitForURL(`**/orgs/${t.orgId}/agents`);
    // Revoke the away agent: the pages below know one agent.
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${away.agentId}`)).status).toBe(200);
  });

  it('keeps its header on one line at 1,280 and 1,400 pixels, with a link to the API reference and an icon', async () => {
    const header = page().getByRole('banner');
    for (const width of [1280, 1400]) {
      await page().setViewportSize({ width, height: 800 });
      await page().goto(`/orgs/${t.orgId}/agents`);
      await page().getByRole('heading', { name: 'Agents' }).waitFor();
      await header.screenshot({ path: path.join(os.tmpdir(), `drover-header-${width}.png`) });
      const box = (await header.boundingBox())!;
      // One line: the height of its tallest control (the sign-out button) and its padding.
      expect(box.height, `the header's height at ${width} px`).toBeLessThan(60);
      const nav = page().getByRole('navigation', { name: 'Main' });
      // Every link is drawn whole, none scrolled out of the navigation.
      const bounds = (await nav.boundingBox())!;
      for (const link of await nav.getByRole('link').all()) {
        const b = (await link.boundingBox())!;
        expect(b.x + b.width, `${await link.innerText()} at ${width} px`).toBeLessThanOrEqual(
          bounds.x + bounds.width + 1,
        );
      }
      expect(await header.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    }
    await page().setViewportSize({ width: 1280, height: 800 });
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
    expect(await member.page.getByRole('banner').innerText()).toContain('(member)');
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

  it('returns to sign-in when the session expires while a page is open', async () => {
    const cookie = (await owner.context.cookies()).find((c) => c.name === 'drover_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    offset += 13 * HOUR; // past the 12 hours a session lasts
    // The Agents page refreshes on its own; its next read is refused, and the page goes to sign-in.
    await page().waitForURL('**/login?reason=expired&next=*', { timeout: 20_000 });
    await page().getByText('Your session ended; sign in again to continue.').waitFor();
    expect(owner.problems).toEqual([]);
  });
});
