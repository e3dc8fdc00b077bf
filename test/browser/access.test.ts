import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import {
  enrollAgentStateDir,
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
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { addUser, MEMBER_PASSWORD as HELPER_PASSWORD } from '../helpers/members.js';

/**
 * The API tokens, Members, Settings and account pages in a real Chromium against a real coordinator and
 * agent: an owner issues a token with the grants picker (a refused limit and an empty storage
 * grant shown at their fields), reads its plaintext once, uses it with the real `curl`, revokes it
 * (curl then gets 401); invites a member (and revokes a mistyped invitation), who accepts on
 * signing in; changes the retention on the Settings page (a refused value at its field), which the
 * member reads without a way to change it, with the last retention sweep; changes a role, meets
 * the last-owner rule and a 403; the member does not see the owner-only actions, changes their password on the account page (their other sessions end) and
 * signs out everywhere; signing out asks for sign-in again. Every page is checked with axe-core
 * and for CSP violations.
 */

const HELLO = fs.readFileSync(new URL('../../agent/examples/workflows/hello.yaml', import.meta.url), 'utf8');
const MEMBER_EMAIL = 'dev@example.test';
const MEMBER_PASSWORD = 'a long member password';
const NEW_MEMBER_PASSWORD = 'a new member passphrase';

const run = promisify(execFile);

/** curl (Debian's `curl`; scripts/lib/test-tools.sh installs it): missing fails CI, and skips elsewhere. */
const CURL = spawnSync('curl', ['--version']).status === 0;
if (!CURL) {
  if (process.env.CI) throw new Error('curl is missing: CI runs the API tokens browser test');
  console.warn('curl is missing (apt-get install curl); the API tokens browser test is skipped');
}

/** The real curl binary: the answer's status and body. */
async function curl(args: string[]): Promise<{ status: number; body: string }> {
  const { stdout } = await run('curl', ['-s', '-w', '\n%{http_code}', ...args]);
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

describe.skipIf(!CHROMIUM || !CURL)('the API tokens, Members and Settings pages in a browser', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let member: TestPage | undefined;
  let daemon: DaemonProcess | undefined;
  let triggerId: string;
  let plaintext: string;

  beforeAll(async () => {
    t = await startTestCoordinator();
    const enrolled = await enrollAgentStateDir(t);
    writeWorkflowFile(enrolled.stateDir, 'hello', HELLO);
    daemon = startDaemonProcess(enrolled.stateDir);
    await waitFor(
      async () => {
        const workflows = await t.owner.get<{ name: string }[]>(`/orgs/${t.orgId}/workflows`);
        expect(workflows.body.map((w) => w.name)).toEqual(['hello']);
      },
      { timeout: 20_000, interval: 100 },
    );
    const kinds = [
      { name: 'hello webhook', responseMode: 'async' },
      { name: 'nightly', type: 'cron', cronExpression: '0 3 * * *' },
    ];
    for (const kind of kinds) {
      const created = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
        body: { agentId: enrolled.agentId, scopeType: 'workflow', workflowName: 'hello', ...kind },
      });
      expect(created.status, created.text).toBe(201);
      if (kind.name === 'hello webhook') triggerId = created.body.id;
    }
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await owner.page.goto('/login');
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD);
    await owner.page.waitForURL(`**/orgs/${t.orgId}`);
  }, 60_000);
  afterAll(async () => {
    await stopDaemonProcess(daemon);
    await browser?.close();
    await t?.close();
  });
  let viewerPage: Page | undefined;
  screenshotOnFailure(() => [owner?.page, member?.page, viewerPage]);

  const page = (): Page => owner.page;
  async function signIn(p: Page, email: string, password: string) {
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  }
  const nav = (p: Page, name: string) => p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name });

  it('lists no API token yet, from the navigation', async () => {
    await nav(page(), 'API tokens').click();
    await page().getByRole('heading', { name: 'API tokens' }).waitFor();
    await page().getByText('No API token yet.').waitFor();
    await expectAccessible(page(), 'the empty API tokens page');
  });

  it('says not found at the API tokens address of an organization one is not in, without a crash', async () => {
    await page().goto('/orgs/00000000-0000-4000-8000-000000000000/api-tokens');
    await page().getByRole('heading', { name: 'Page not found' }).waitFor();
    expect(owner.problems).toEqual([]);
    // Back to this organization's page, where the next test goes on.
    await page().goto(`/orgs/${t.orgId}/api-tokens`);
    await page().getByText('No API token yet.').waitFor();
  });

  it('issues a token with the grants picker: refusals shown at their fields, then the plaintext once', async () => {
    // A token runs webhook triggers only: the cron trigger is not offered.
    const runs = page().getByRole('group', { name: 'Run triggers' });
    await runs.getByRole('checkbox', { name: /^hello webhook/ }).waitFor();
    expect(await runs.getByRole('checkbox', { name: /^nightly/ }).count()).toBe(0);
    await page().getByLabel('Name', { exact: true }).fill('ci');
    await page()
      .getByRole('checkbox', { name: /^hello webhook/ })
      .check();
    await page()
      .getByRole('checkbox', { name: /^daemon-test \(workflows: hello\)/ })
      .check();
    await page().getByLabel('Storage bindings').selectOption('some');
    await page().getByRole('checkbox', { name: 'write' }).check();
    // A limit the browser cannot read as a number ("1e": the input's value is empty) is refused at
    // its input, not issued as no limit.
    await page().getByLabel('Per hour').pressSequentially('1e');
    await page().getByRole('button', { name: 'Issue token' }).click();
    expect(await page().locator('#token-rateLimitPerHour-error').innerText()).toBe('must be a number, such as 30');
    await page().getByLabel('Per hour').fill('');
    await page().getByLabel('Per minute').fill('0');
    await page().getByRole('button', { name: 'Issue token' }).click();

    // The schema's refusal comes first, at its input.
    const limitError = page().locator('#token-rateLimitPerMinute-error');
    await limitError.waitFor();
    expect(await limitError.innerText()).toContain('must be at least 1');
    expect(await page().getByLabel('Per minute').getAttribute('aria-invalid')).toBe('true');
    expect(await page().getByRole('alert').innerText()).toContain('Some fields need a change');
    await expectAccessible(page(), 'the issue form with an error');

    // Then the grants' own check: storage chosen "some" without a binding, under the storage group.
    await page().getByLabel('Per minute').fill('60');
    await page().getByRole('button', { name: 'Issue token' }).click();
    const bindingError = page().locator('#token-bindingIds-error');
    await bindingError.waitFor();
    expect(await bindingError.innerText()).toContain('must list at least one id');
    expect(await page().locator('#token-rateLimitPerMinute-error').count()).toBe(0);
    await docScreenshot(page(), 'api-token-form');

    await page().getByLabel('Storage bindings').selectOption('all');
    await page().getByRole('button', { name: 'Issue token' }).click();
    const issued = page().getByRole('region', { name: 'New API token' });
    await issued.waitFor();
    expect(await issued.innerText()).toContain('this is the only time it is shown');
    plaintext = await issued.getByLabel('API token').innerText();
    expect(plaintext).toMatch(/^drv_/);
    await owner.context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await issued.getByRole('button', { name: 'Copy' }).click();
    await issued.getByText('Copied.').waitFor();
    const copied = await page().evaluate(() =>
      (
        globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
      ).navigator.clipboard.readText(),
    );
    expect(copied).toBe(plaintext);

    const row = page().getByRole('row', { name: 'ci' });
    await row.waitFor();
    const text = await row.innerText();
    expect(text).toContain('run triggers: hello webhook');
    expect(text).toContain('agents: daemon-test');
    expect(text).toContain('storage (every binding): read, write');
    expect(text).toContain('60 a minute');
    expect(text).toContain(`drv_…${plaintext.slice(-4)}`);
    await expectAccessible(page(), 'the API tokens page with a new token');
    await docScreenshot(page(), 'api-tokens');

    const tokens = await t.owner.get<{ name: string; scopes: unknown[] }[]>(`/orgs/${t.orgId}/api-tokens`);
    expect(tokens.body).toHaveLength(1);
    expect(tokens.body[0]).toMatchObject({
      name: 'ci',
      scopes: [
        { type: 'agent', agentIds: [expect.any(String)] },
        { type: 'trigger', triggerIds: [triggerId] },
        { type: 'storage', bindingIds: null, permissions: ['read', 'write'] },
      ],
      rateLimit: { perMinute: 60, perHour: null, perDay: null },
      expiresAt: null,
    });

    // Shown once: after a reload only its hint is left.
    await page().reload();
    await page().getByRole('row', { name: 'ci' }).waitFor();
    expect(await page().getByRole('region', { name: 'New API token' }).count()).toBe(0);
    expect(await page().content()).not.toContain(plaintext);
  });

  it('the token works with curl, and once revoked in the page curl gets 401', async () => {
    const auth = ['-H', `authorization: Bearer ${plaintext}`];
    const agents = await curl([...auth, `${t.url}/v1/agents`]);
    expect(agents.status).toBe(200);
    expect(agents.body).toContain('"daemon-test"');
    const started = await curl([
      ...auth,
      ...['-X', 'POST', '-H', 'content-type: application/json', '-d', '{"params":{"who":"curl"}}'],
      `${t.url}/v1/triggers/${triggerId}/run`,
    ]);
    expect(started.status).toBe(202);
    expect(JSON.parse(started.body)).toMatchObject({ jobId: expect.any(String) });

    await page().getByRole('button', { name: 'Revoke ci' }).click();
    const confirm = page().getByRole('group', { name: 'Revoke ci' });
    expect(await confirm.innerText()).toContain('cannot be undone');
    await confirm.getByRole('button', { name: 'Revoke token' }).click();
    await page().getByRole('row', { name: 'ci' }).getByText('revoked', { exact: true }).waitFor();
    expect(await page().getByRole('button', { name: 'Revoke ci' }).count()).toBe(0);

    const refused = await curl([...auth, `${t.url}/v1/agents`]);
    expect(refused.status).toBe(401);
    expect(refused.body).toContain('revoked');
    expect(owner.problems).toEqual([]);
  });

  it('invites a member with the form (a short password refused at its field); the invitation waits, revocable', async () => {
    await nav(page(), 'Members').click();
    await page().getByRole('heading', { name: 'Members', exact: true }).waitFor();
    await page().getByRole('row', { name: OWNER_EMAIL }).waitFor();
    await expectAccessible(page(), 'the Members page');

    await page().getByLabel('Email').fill(MEMBER_EMAIL);
    await page().getByLabel('First password').fill('short');
    await page().getByRole('button', { name: 'Invite', exact: true }).click();
    const passwordError = page().locator('#member-password-error');
    await passwordError.waitFor();
    expect(await passwordError.innerText()).toMatch(/8/);
    expect(await page().getByLabel('First password').getAttribute('aria-invalid')).toBe('true');

    await page().getByLabel('First password').fill(MEMBER_PASSWORD);
    await page().getByRole('button', { name: 'Invite', exact: true }).click();
    await page()
      .getByRole('status')
      .filter({ hasText: `Invited ${MEMBER_EMAIL} as member` })
      .waitFor();
    await page()
      .getByRole('row', { name: `Invitation of ${MEMBER_EMAIL}` })
      .waitFor();
    // Not a member until they accept.
    expect(await page().getByRole('row', { name: MEMBER_EMAIL, exact: true }).count()).toBe(0);

    // A mistyped invitation, revoked.
    await page().getByLabel('Email').fill('typo@example.test');
    await page().getByRole('button', { name: 'Invite', exact: true }).click();
    await page().getByRole('row', { name: 'Invitation of typo@example.test' }).waitFor();
    await expectAccessible(page(), 'the Members page with pending invitations');
    await page().getByRole('button', { name: 'Revoke the invitation of typo@example.test' }).click();
    await waitFor(
      async () => expect(await page().getByRole('row', { name: 'Invitation of typo@example.test' }).count()).toBe(0),
      { interval: 50 },
    );
    expect(owner.problems).toEqual([]);
  });

  it('the invitee accepts on signing in, then sees the Members page without the owner-only actions, and issues tokens', async () => {
    member = await openPage(browser, t.url);
    await member.page.goto('/');
    await member.page.waitForURL('**/login');
    await signIn(member.page, MEMBER_EMAIL, MEMBER_PASSWORD);
    await member.page.getByRole('heading', { name: 'No organization yet' }).waitFor();
    const invitation = member.page.getByRole('listitem', { name: 'Invitation to acme' });
    await invitation.waitFor();
    expect(await invitation.innerText()).toContain(`acme invites you as a member (${OWNER_EMAIL})`);
    expect(await member.page.getByRole('link', { name: /, your account · 1 invitation$/ }).count()).toBe(1);
    await expectAccessible(member.page, 'an invitee without an organization');
    await invitation.getByRole('button', { name: 'Accept and join acme' }).click();
    await member.page.waitForURL(`**/orgs/${t.orgId}`);

    await nav(member.page, 'Members').click();
    await member.page.getByRole('heading', { name: 'Members', exact: true }).waitFor();
    await member.page.getByRole('row', { name: OWNER_EMAIL }).waitFor();
    expect(await member.page.getByText('Only an owner invites, changes or removes members.').count()).toBe(1);
    expect(await member.page.getByRole('heading', { name: 'Invite a member' }).count()).toBe(0);
    expect(await member.page.getByRole('heading', { name: 'Pending invitations' }).count()).toBe(0);
    expect(await member.page.getByRole('button', { name: /^(Remove|Change role|Revoke)/ }).count()).toBe(0);
    await expectAccessible(member.page, "a member's Members page");

    // Any member may issue and revoke tokens (the API allows it): the form is there.
    // A member revokes the tokens they issued, not the owner's (the API answers that with 403).
    const grant = { name: 'deploy-bot', scopes: [{ type: 'trigger', triggerIds: [triggerId] }] };
    expect((await t.owner.post(`/orgs/${t.orgId}/api-tokens`, { body: grant })).status).toBe(201);
    const issued = await member.page.evaluate(
      async ({ orgId }) =>
        (
          await fetch(`/v1/orgs/${orgId}/api-tokens`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-drover-csrf': '1' },
            body: JSON.stringify({ name: 'my-script', scopes: [] }),
          })
        ).status,
      { orgId: t.orgId },
    );
    expect(issued).toBe(201);
    await nav(member.page, 'API tokens').click();
    await member.page.getByRole('row', { name: 'ci' }).waitFor();
    await member.page.getByRole('button', { name: 'Issue token' }).waitFor();
    await member.page.getByRole('button', { name: 'Revoke my-script' }).waitFor();
    await member.page.getByRole('row', { name: 'deploy-bot' }).waitFor();
    expect(await member.page.getByRole('button', { name: 'Revoke deploy-bot' }).count()).toBe(0);
    await expectAccessible(member.page, "a member's API tokens page");
    expect(member.problems).toEqual([]);
  });

  it('an owner changes the retention on the Settings page: a refusal at its field, a value that sticks, the default again', async () => {
    await nav(page(), 'Settings').click();
    await page().getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    const jobs = page().getByRole('row', { name: 'Ended jobs' });
    expect(await jobs.innerText()).toContain('90 days (coordinator default)');
    expect(await page().getByRole('row', { name: 'Failed jobs' }).innerText()).toContain(
      '180 days (coordinator default)',
    );
    const database = page().getByRole('region', { name: 'Database' });
    expect(await database.innerText()).toMatch(
      t.coordinator.database === 'sqlite'
        ? /Engine\s+SQLite\s+Size on disk\s+[\d.]+ (KB|MB)\s+Free inside the file\s+[\d.]+ (bytes|KB|MB)[\s\S]*VACUUM/
        : /Engine\s+PostgreSQL\s+Size on disk\s+[\d.]+ (KB|MB)[\s\S]*autovacuum/,
    );
    await expectAccessible(page(), 'the Settings page');

    const field = page().getByLabel('Ended jobs (days)');
    expect(await field.inputValue()).toBe('');
    await field.fill('0');
    await page().getByRole('button', { name: 'Save retention' }).click();
    const refusal = page().locator('#retention-jobsDays-error');
    await refusal.waitFor();
    expect(await refusal.innerText()).toBe(
      "expected a whole number of days from 1 to 3650, or null for the coordinator's setting; got 0",
    );
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    expect(await page().getByRole('alert').innerText()).toContain('Some fields need a change');
    await expectAccessible(page(), 'the Settings page with a refusal');

    await field.fill('30');
    await page().getByRole('button', { name: 'Save retention' }).click();
    await page().getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    await waitFor(
      async () =>
        expect(await jobs.innerText()).toContain("30 days (this organization's; the coordinator's default is 90 days)"),
      { interval: 50 },
    );
    expect(await page().locator('#retention-jobsDays-error').count()).toBe(0);
    await page().reload();
    await jobs.waitFor();
    expect(await jobs.innerText()).toContain("30 days (this organization's");
    expect(await field.inputValue()).toBe('30');
    // Days the browser cannot read as a number ("3-0": the input's value is empty) are refused at
    // the field, not saved as the coordinator's default.
    await field.fill('');
    await field.pressSequentially('3-0');
    await page().getByRole('button', { name: 'Save retention' }).click();
    expect(await page().locator('#retention-jobsDays-error').innerText()).toBe('must be a number, such as 30');
    await field.fill('30');
    const view = await t.owner.get<{ overrides: Record<string, number | null> }>(`/orgs/${t.orgId}/retention`);
    expect(view.body.overrides).toEqual({ jobsDays: 30, failedJobsDays: null, auditDays: null, occurrencesDays: null });

    // Back to the coordinator's value: "Use default" empties the field, saving sends null.
    await page().getByRole('button', { name: 'Use default: ended jobs' }).click();
    expect(await field.inputValue()).toBe('');
    await page().getByRole('button', { name: 'Save retention' }).click();
    await waitFor(async () => expect(await jobs.innerText()).toContain('90 days (coordinator default)'), {
      interval: 50,
    });
    expect((await t.owner.get(`/orgs/${t.orgId}`)).body.retention).toEqual({
      jobsDays: 90,
      failedJobsDays: 180,
      auditDays: 365,
      occurrencesDays: 30,
    });
    await nav(page(), 'Members').click();
    expect(owner.problems).toEqual([]);
  });

  it('a member reads the Settings page: the values that apply and whose they are, and nothing to change them with', async () => {
    expect((await t.owner.patch(`/orgs/${t.orgId}`, { body: { retention: { auditDays: 730 } } })).status).toBe(200);
    const p = member!.page;
    await nav(p, 'Settings').click();
    await p.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    // The retention's rows, not the last sweep's (whose rows say the same kinds once a sweep ran).
    const retention = p.getByRole('region', { name: 'Retention', exact: true });
    const audit = retention.getByRole('row', { name: 'Audit entries' });
    await audit.waitFor();
    expect(await audit.innerText()).toContain("730 days (this organization's; the coordinator's default is 365 days)");
    expect(await retention.getByRole('row', { name: 'Ended jobs' }).innerText()).toContain(
      '90 days (coordinator default)',
    );
    expect(await p.getByText('Only an owner changes the retention.').count()).toBe(1);
    expect(await p.getByRole('button', { name: /Save retention|Use default/ }).count()).toBe(0);
    expect(await p.getByRole('spinbutton').count()).toBe(0);
    await p.getByRole('heading', { name: 'Last retention sweep' }).waitFor();
    await expectAccessible(p, "a member's Settings page");
    expect(member!.problems).toEqual([]);
  });

  it("shows the coordinator's last retention sweep: when, what it deleted by kind, its longest batch", async () => {
    const sweep = page().getByRole('region', { name: 'Last retention sweep' });
    await nav(page(), 'Settings').click();
    await sweep.waitFor();
    // A sweep of the test's own after one audit entry aged past the organization's 730 days, shown
    // once the page is read: again should the timer's first sweep (30 s after start) come between.
    await waitFor(
      async () => {
        await t.sql.run(
          'UPDATE audit_log SET created_at = ? WHERE id = (SELECT min(id) FROM audit_log WHERE org_id = ?)',
          new Date(Date.now() - 3 * 365 * 86_400_000).toISOString(),
          t.orgId,
        );
        const report = await t.coordinator.ctx.retention.sweep();
        expect(report.deleted).toEqual({
          jobs: 0,
          logLines: 0,
          auditEntries: 1,
          occurrences: 0,
          batches: 0,
          rolloutEvents: 0,
        });
        await page().reload();
        await sweep.locator('time').waitFor();
        expect(await sweep.locator('time').getAttribute('datetime')).toBe(report.startedAt);
        expect(await sweep.getByRole('row', { name: 'Audit entries 1' }).count()).toBe(1);
        expect(await sweep.getByRole('row', { name: 'Jobs 0' }).count()).toBe(1);
        expect(await sweep.innerText()).toMatch(
          new RegExp(`Took\\s+[\\d.,]+ ms in ${report.batches} batches\\s+Longest batch\\s+[\\d.,]+ ms`),
        );
      },
      { timeout: 20_000, interval: 100 },
    );
    await expectAccessible(page(), 'the Settings page after a sweep');
    await docScreenshot(page(), 'settings');
    await nav(page(), 'Members').click();
    expect(owner.problems).toEqual([]);
  });

  it('changes a role, and meets the last-owner rule', async () => {
    await page().reload();
    const row = page().getByRole('row', { name: MEMBER_EMAIL, exact: true });
    await row.waitFor();
    expect(await row.innerText()).toContain('member');
    expect(
      await page()
        .getByRole('row', { name: `Invitation of ${MEMBER_EMAIL}` })
        .count(),
    ).toBe(0);

    // The only owner cannot demote themselves: the API's reason, in the row.
    await page()
      .getByRole('button', { name: `Change role: ${OWNER_EMAIL}` })
      .click();
    const demote = page().getByRole('form', { name: `Change the role of ${OWNER_EMAIL}` });
    await demote.getByLabel('New role for yourself').selectOption('member');
    await demote.getByRole('button', { name: 'Change role' }).click();
    await demote.getByRole('alert').waitFor();
    expect(await demote.getByRole('alert').innerText()).toContain(
      'The last owner of an organization cannot be demoted',
    );
    await expectAccessible(page(), 'the Members page with a refusal');
    await docScreenshot(page(), 'members');
    await demote.getByRole('button', { name: 'Keep the role' }).click();

    // Make the new member each other role in turn, and a member again.
    for (const to of ['owner', 'operator', 'viewer', 'member'] as const) {
      await page()
        .getByRole('button', { name: `Change role: ${MEMBER_EMAIL}` })
        .click();
      const form = page().getByRole('form', { name: `Change the role of ${MEMBER_EMAIL}` });
      await form.getByLabel(`New role for ${MEMBER_EMAIL}`).selectOption(to);
      await form.getByRole('button', { name: 'Change role' }).click();
      await waitFor(async () => expect(await row.locator('td').first().innerText()).toBe(to), { interval: 50 });
    }
    expect(owner.problems).toEqual([]);
  });

  it('shows a viewer every page to read and no control to change anything', async () => {
    await addUser(t.owner, t.orgId, 'viewer@example.test', 'viewer');
    const viewer = await openPage(browser, t.url);
    viewerPage = viewer.page;
    try {
      const p = viewer.page;
      await p.goto('/login');
      await signIn(p, 'viewer@example.test', HELPER_PASSWORD);
      await p.waitForURL(`**/orgs/${t.orgId}`);
      expect(await nav(p, 'Audit log').count()).toBe(0);

      await nav(p, 'Agents').click();
      await p.getByRole('row', { name: 'daemon-test' }).waitFor();
      expect(await p.getByRole('button', { name: /^(Rename|Revoke)/ }).count()).toBe(0);
      expect(await p.getByRole('heading', { name: 'Enroll an agent' }).count()).toBe(0);

      await nav(p, 'Triggers').click();
      await p.getByRole('link', { name: 'hello webhook' }).click();
      await p.getByRole('heading', { name: 'hello webhook' }).waitFor();
      await p.getByRole('heading', { name: 'Recent jobs' }).waitFor();
      expect(await p.getByRole('link', { name: /^(Edit|New trigger)$/ }).count()).toBe(0);
      expect(await p.getByRole('button', { name: /^(Run|Delete)/ }).count()).toBe(0);
      // The form's address, typed or bookmarked: why there is no form.
      await p.goto(`/orgs/${t.orgId}/triggers/${triggerId}/edit`);
      await p.getByText('A viewer cannot create or change triggers: an owner, an operator or a member can.').waitFor();
      expect(await p.getByRole('button', { name: 'Save trigger' }).count()).toBe(0);

      await nav(p, 'API tokens').click();
      await p.getByRole('row', { name: 'ci' }).waitFor();
      expect(await p.getByRole('button', { name: /^(Issue token|Revoke)/ }).count()).toBe(0);

      await nav(p, 'Members').click();
      await p.getByRole('row', { name: 'viewer@example.test' }).waitFor();
      expect(await p.getByRole('button', { name: /^(Remove|Change role)/ }).count()).toBe(0);
      await expectAccessible(p, "a viewer's Members page");

      // An organization without agents: its first steps, without the enrollment form.
      const empty = await t.owner.post<{ id: string }>('/orgs', { body: { name: 'empty lab' } });
      await addUser(t.owner, empty.body.id, 'viewer@example.test', 'viewer');
      await p.goto(`/orgs/${empty.body.id}`);
      await p.getByRole('heading', { name: 'Welcome to empty lab' }).waitFor();
      await p.getByText('a member of the organization creates an enrollment token here').waitFor();
      expect(await p.getByRole('heading', { name: 'Enroll an agent' }).count()).toBe(0);
      expect(viewer.problems).toEqual([]);
    } finally {
      await viewer.page.close();
    }
  });

  it("shows the API's 403 to an owner demoted while the page was open", async () => {
    // The member becomes an owner and demotes the first owner, whose page still shows the buttons.
    const users = await t.owner.get<{ userId: string; email: string }[]>(`/orgs/${t.orgId}/members`);
    const id = (email: string) => users.body.find((m) => m.email === email)!.userId;
    expect(
      (await t.owner.patch(`/orgs/${t.orgId}/members/${id(MEMBER_EMAIL)}`, { body: { role: 'owner' } })).status,
    ).toBe(200);
    const dev = await t.owner.withToken(null).login(MEMBER_EMAIL, MEMBER_PASSWORD);
    expect((await dev.patch(`/orgs/${t.orgId}/members/${id(OWNER_EMAIL)}`, { body: { role: 'member' } })).status).toBe(
      200,
    );

    await page()
      .getByRole('button', { name: `Remove ${MEMBER_EMAIL}` })
      .click();
    const confirm = page().getByRole('group', { name: `Remove ${MEMBER_EMAIL}` });
    await confirm.getByRole('button', { name: 'Remove member' }).click();
    await confirm.getByRole('alert').waitFor();
    expect(await confirm.getByRole('alert').innerText()).toContain(
      'Not allowed: Only an owner of the organization can do this',
    );
    expect((await t.owner.get<unknown[]>(`/orgs/${t.orgId}/members`)).body).toHaveLength(3);
  });

  it('changes the password on the account page, reached from the header: the other sessions end, this one goes on', async () => {
    const p = member!.page;
    const elsewhere = await t.api.login(MEMBER_EMAIL, MEMBER_PASSWORD); // a script's session of the same user
    await p.getByRole('link', { name: /your account/ }).click();
    await p.getByRole('heading', { name: 'Your account' }).waitFor();
    await expectAccessible(p, 'the account page');

    await p.getByLabel('Current password').fill('not my password');
    await p.getByLabel('New password', { exact: true }).fill(NEW_MEMBER_PASSWORD);
    await p.getByLabel('New password again').fill(`${NEW_MEMBER_PASSWORD}!`);
    await p.getByRole('button', { name: 'Change password' }).click();
    await p.locator('#account-again-error').waitFor();
    await p.getByLabel('New password again').fill(NEW_MEMBER_PASSWORD);
    await p.getByRole('button', { name: 'Change password' }).click();
    const wrong = p.locator('#account-currentPassword-error');
    await wrong.waitFor();
    expect(await wrong.innerText()).toBe('is not your current password');
    expect(await p.getByLabel('Current password').getAttribute('aria-invalid')).toBe('true');
    await expectAccessible(p, 'the account page with a refusal');

    await p.getByLabel('Current password').fill(MEMBER_PASSWORD);
    await p.getByRole('button', { name: 'Change password' }).click();
    await p.getByRole('status').filter({ hasText: 'Your password is changed' }).waitFor();
    await docScreenshot(p, 'account');
    expect((await elsewhere.get('/orgs')).status).toBe(401);
    // This browser's session was renewed: the pages go on.
    await nav(p, 'Members').click();
    await p.getByRole('row', { name: OWNER_EMAIL }).waitFor();
    expect(member!.problems).toEqual([]);
  });

  it('signs out everywhere from the account page: this browser and every other session of the user', async () => {
    const p = member!.page;
    const elsewhere = await t.api.login(MEMBER_EMAIL, NEW_MEMBER_PASSWORD);
    await p.getByRole('link', { name: /your account/ }).click();
    await p.getByRole('button', { name: 'Sign out everywhere…' }).click();
    await p
      .getByRole('group', { name: 'Sign out everywhere' })
      .getByRole('button', { name: 'Sign out everywhere' })
      .click();
    await p.waitForURL('**/login');
    expect((await elsewhere.get('/orgs')).status).toBe(401);
    await p.goto(`/orgs/${t.orgId}/members`);
    await p.waitForURL('**/login?next=*');
    await signIn(p, MEMBER_EMAIL, NEW_MEMBER_PASSWORD);
    await p.getByRole('heading', { name: 'Members', exact: true }).waitFor();
    expect(member!.problems).toEqual([]);
  });

  it('signs out: back to the sign-in page, and the old page asks to sign in again', async () => {
    const p = member!.page;
    await p.getByRole('button', { name: 'Sign out' }).click();
    await p.waitForURL('**/login');
    await p.getByRole('button', { name: 'Sign in' }).waitFor();
    await p.goto(`/orgs/${t.orgId}/api-tokens`);
    await p.waitForURL('**/login?next=*');
    expect(new URL(p.url()).searchParams.get('next')).toBe(`/orgs/${t.orgId}/api-tokens`);
    expect(member!.problems).toEqual([]);
  });
});
