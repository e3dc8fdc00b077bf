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
    expect(await banner.innerText()).toContain(`Signed in as ${OWNER_EMAIL} (owner)`);
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
