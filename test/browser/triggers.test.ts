import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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
import {
  makeTempDir,
  OWNER_EMAIL,
  OWNER_PASSWORD,
  startTestCoordinator,
  type TestCoordinator,
} from '../helpers/coordinator.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';

/**
 * The Triggers pages in a real Chromium against a real coordinator and a real agent: create a
 * webhook trigger (a validation error shown at its field, then fixed), run it by hand from the
 * form generated from the workflow's params and land on the job page, a sync run that waits and
 * shows its result, a cron trigger's schedule, edit, a member's view, delete. Every page is
 * checked with axe-core and for CSP violations.
 */

const HELLO = fs.readFileSync(new URL('../../agent/examples/workflows/hello.yaml', import.meta.url), 'utf8');

/** A workflow with a param of each kind; its step waits for a file the test writes (`gate`). */
const kindsWorkflow = (gate: string) => `
name: kinds
description: Every kind of param
params:
  - name: target
    type: enum
    options: [staging, production]
    required: true
  - name: replicas
    type: number
    min: 1
    max: 10
    default: 2
  - name: dry
    type: boolean
    default: true
  - name: tag
    type: string
    pattern: '^v[0-9]+$'
timeout: 1m
steps:
  - name: wait
    run: while [ ! -f '${gate}' ]; do sleep 0.05; done; echo "target=$DROVER_PARAM_TARGET" >> "$DROVER_OUTPUT"
    shell: true
`;

describe.skipIf(!CHROMIUM)('the Triggers pages in a browser', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let member: TestPage | undefined;
  let daemon: DaemonProcess | undefined;
  let agentId: string;
  let gate: string;
  let webhookId: string;

  beforeAll(async () => {
    // One enabled cron trigger per organization: a second is refused on the form.
    t = await startTestCoordinator({ env: { DROVER_MAX_CRON_TRIGGERS_PER_ORG: '1' } });
    const enrolled = await enrollAgentStateDir(t);
    agentId = enrolled.agentId;
    gate = path.join(makeTempDir('drover-browser-gate-'), 'open');
    writeWorkflowFile(enrolled.stateDir, 'hello', HELLO);
    writeWorkflowFile(enrolled.stateDir, 'kinds', kindsWorkflow(gate));
    daemon = startDaemonProcess(enrolled.stateDir);
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await owner.page.goto('/login');
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD);
    await owner.page.waitForURL(`**/orgs/${t.orgId}`);
    // Both workflows reported: the forms below offer them.
    await vi.waitFor(
      async () => {
        const workflows = await t.owner.get<{ name: string }[]>(`/orgs/${t.orgId}/workflows`);
        expect(workflows.body).toHaveLength(2);
      },
      { timeout: 20_000, interval: 100 },
    );
  }, 60_000);
  afterAll(async () => {
    await stopDaemonProcess(daemon);
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page, member?.page]);

  const page = (): Page => owner.page;
  async function signIn(p: Page, email: string, password: string) {
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  }

  it('lists no trigger yet, from the navigation', async () => {
    await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Triggers' }).click();
    await page().getByRole('heading', { name: 'Triggers' }).waitFor();
    await page().getByText('No trigger yet.').waitFor();
    await expectAccessible(page(), 'the empty Triggers page');
  });

  it('creates a webhook trigger: the API refuses a field, the page says so next to it, then it is fixed', async () => {
    await page().getByRole('link', { name: 'New trigger' }).click();
    await page().getByRole('heading', { name: 'New trigger' }).waitFor();
    await page().getByLabel('Name', { exact: true }).fill('hello by hand');
    await page().getByLabel('Agent', { exact: true }).selectOption({ label: 'daemon-test' });
    await page().getByLabel('Workflow', { exact: true }).fill('hello');
    // A sync wait typed, then the answer set back to async: the hidden wait is not sent.
    await page().getByLabel('Answer').selectOption('sync');
    await page().getByLabel('Sync wait (ms)').fill('500');
    await page().getByLabel('Answer').selectOption('async');
    await page()
      .getByLabel('Allowed refs')
      .fill('main\n' + 'x'.repeat(300));
    await page().getByRole('button', { name: 'Create trigger' }).click();

    const refsError = page().locator('#f-allowedRefs-error');
    await refsError.waitFor();
    expect(await refsError.innerText()).toMatch(/255/);
    expect(await page().getByLabel('Allowed refs').getAttribute('aria-invalid')).toBe('true');
    expect(await page().getByRole('alert').innerText()).toContain('Some fields need a change');
    await expectAccessible(page(), 'the trigger form with an error');
    await docScreenshot(page(), 'trigger-form');

    await page().getByLabel('Allowed refs').fill('');
    await page().getByRole('button', { name: 'Create trigger' }).click();
    await page().getByRole('heading', { name: 'hello by hand' }).waitFor();
    webhookId = page().url().split('/').pop()!;
    const trigger = await t.owner.get(`/orgs/${t.orgId}/triggers/${webhookId}`);
    expect(trigger.body).toMatchObject({
      name: 'hello by hand',
      type: 'webhook',
      agentId,
      workflowName: 'hello',
      responseMode: 'async',
      allowedRefs: null,
    });

    // The public run's address and a curl to paste, with a token placeholder.
    const url = `${t.url}/v1/triggers/${webhookId}/run`;
    expect(await page().getByLabel('Run URL').innerText()).toBe(url);
    const curl = await page().getByLabel('Example curl').innerText();
    expect(curl).toContain(`curl -s -X POST ${url}`);
    expect(curl).toContain("-H 'authorization: Bearer <API token>'");
    await expectAccessible(page(), "a webhook trigger's page");
  });

  it('runs it by hand from the form made of the workflow params, and lands on the job page', async () => {
    const who = page().getByLabel('who', { exact: true });
    expect(await who.inputValue()).toBe('world'); // the default
    await who.fill('not/valid!');
    await page().getByRole('button', { name: 'Run now' }).click();
    const whoError = page().locator('#param-who-error');
    await whoError.waitFor();
    expect(await whoError.innerText()).toContain('^[A-Za-z0-9 _.-]{1,64}$');
    await docScreenshot(page(), 'trigger-webhook');

    await who.fill('Drover');
    await page().getByRole('button', { name: 'Run now' }).click();
    await page().waitForURL('**/api/jobs/*');
    await page().getByText('success', { exact: true }).waitFor({ timeout: 20_000 });
    expect(await page().getByRole('main').innerText()).toContain('Hello, Drover!');
    const jobId = page().url().split('/').pop()!;
    const job = await t.owner.get(`/jobs/${jobId}`);
    expect(job.body).toMatchObject({ source: 'manual', triggerId: webhookId, params: { who: 'Drover' }, number: 1 });
    expect(await page().getByRole('heading', { level: 1 }).innerText()).toMatch(/^Job #1 hello/);

    // The trigger's page lists it among its recent jobs, by its number.
    await page().goBack();
    const recent = page().getByRole('table', { name: 'Recent jobs' });
    const row = recent.getByRole('row', { name: /^#1 hello/ });
    await row.waitFor();
    await row.getByText(`run by hand by ${OWNER_EMAIL}`).waitFor();
    expect(await row.getByRole('link').getAttribute('href')).toBe(`/api/jobs/${jobId}`);
  });

  it('runs a sync trigger: the page waits, then shows the result; every kind of param has its input', async () => {
    const created = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
      body: { name: 'kinds (sync)', agentId, scopeType: 'workflow', workflowName: 'kinds', responseMode: 'sync' },
    });
    expect(created.status).toBe(201);
    await page().goto(`/orgs/${t.orgId}/triggers/${created.body.id}`);
    await page().getByRole('heading', { name: 'kinds (sync)' }).waitFor();

    const target = page().getByLabel('target (required)');
    expect(await target.locator('option').allInnerTexts()).toEqual(['—', 'staging', 'production']);
    const replicas = page().getByLabel('replicas', { exact: true });
    expect(await replicas.getAttribute('type')).toBe('number');
    expect([await replicas.getAttribute('min'), await replicas.getAttribute('max')]).toEqual(['1', '10']);
    expect(await replicas.inputValue()).toBe('2');
    expect(await page().getByLabel('dry', { exact: true }).isChecked()).toBe(true);
    await page().getByText('matching ^v[0-9]+$').waitFor();
    expect(await page().getByLabel('Debug run').count()).toBe(0); // allowDebug is off

    // A value its pattern refuses: found in the page, by the coordinator's own rules and pattern
    // engine (RE2, loaded for this form), before any request.
    const runs: string[] = [];
    const onRequest = (request: { method(): string; url(): string }) => {
      if (request.method() === 'POST' && request.url().endsWith('/run')) runs.push(request.url());
    };
    page().on('request', onRequest);
    const tag = page().getByLabel('tag', { exact: true });
    await tag.fill('v1x');
    await page().getByRole('button', { name: 'Run now' }).click();
    await page()
      .locator('#param-tag-error')
      .getByText('must match the pattern `^v[0-9]+$`, got `v1x` (string)')
      .waitFor();
    expect(await tag.getAttribute('aria-invalid')).toBe('true');
    expect(runs).toEqual([]);
    page().off('request', onRequest);
    await tag.fill('');

    // A required enum left empty: the API's message sits under it.
    await page().getByRole('button', { name: 'Run now' }).click();
    await page().locator('#param-target-error').waitFor();

    await target.selectOption({ label: 'production' });
    await replicas.fill('3');
    await page().getByRole('button', { name: 'Run now' }).click();
    await page().getByText('Waiting for the result').waitFor();
    await expectAccessible(page(), 'a sync run waiting');
    fs.writeFileSync(gate, '');
    const result = page().locator('.run-result');
    await result.getByText('success', { exact: true }).waitFor({ timeout: 20_000 });
    expect(await result.innerText()).toContain('"target": "production"');
    await result.getByRole('link', { name: 'Open the job' }).click();
    await page().waitForURL('**/api/jobs/*');
    const job = await t.owner.get(`/jobs/${page().url().split('/').pop()!}`);
    expect(job.body.params).toEqual({ target: 'production', replicas: 3, dry: true });

    // How a trigger answers is its setting when the run arrives. Switched to async after the page
    // read it as sync, the run is accepted (202): the page follows the job, as for an async
    // trigger, rather than showing a result it does not have.
    await page().goBack();
    await page().getByRole('heading', { name: 'kinds (sync)' }).waitFor();
    await target.selectOption({ label: 'staging' });
    const patched = await t.owner.patch(`/orgs/${t.orgId}/triggers/${created.body.id}`, {
      body: { responseMode: 'async' },
    });
    expect(patched.status).toBe(200);
    await page().getByRole('button', { name: 'Run now' }).click();
    await page().waitForURL((url) => url.pathname.startsWith('/api/jobs/') && !url.pathname.endsWith(job.body.id));
  });

  it('creates a cron trigger, refusing an expression that never fires, and shows its next runs', async () => {
    await page().goto(`/orgs/${t.orgId}/triggers/new`);
    await page().getByLabel('Name', { exact: true }).fill('nightly hello');
    await page().getByLabel('Type', { exact: true }).selectOption('cron');
    // A cron trigger answers no caller and never runs in debug: the form asks neither.
    expect(await page().getByLabel('Answer').count()).toBe(0);
    expect(await page().getByLabel('Calls may ask for a debug run').count()).toBe(0);
    await page().getByLabel('Agent', { exact: true }).selectOption({ label: 'daemon-test' });
    await page().getByLabel('Workflow', { exact: true }).fill('hello');
    await page().getByLabel('Cron expression').fill('0 0 31 2 *');
    await page().getByLabel('Time zone').fill('Europe/Paris');
    await page().getByLabel('Params of each run (JSON)').fill('{"who": "night shift"}');
    await page().getByRole('button', { name: 'Create trigger' }).click();
    const cronError = page().locator('#f-cronExpression-error');
    await cronError.waitFor();
    expect(await cronError.innerText()).toContain('never fires');

    await page().getByLabel('Cron expression').fill('30 2 * * MON-FRI');
    await page().getByRole('button', { name: 'Create trigger' }).click();
    await page().getByRole('heading', { name: 'nightly hello' }).waitFor();
    const next = page().getByRole('list', { name: 'Next runs' }).getByRole('listitem');
    expect(await next.count()).toBe(5);
    const first = await next.first().innerText();
    expect(first).toMatch(/^\d{4}-\d\d-\d\d 01:30 UTC\n\d{4}-\d\d-\d\d 02:30 Europe\/Paris \(\+01:00\)$/);
    await page().getByText('No occurrence yet.').waitFor();
    await expectAccessible(page(), "a cron trigger's page");
    await docScreenshot(page(), 'trigger-cron');
    const cronPage = page().url();

    // A second enabled cron trigger is past the server's limit: the form says which and why.
    await page().goto(`/orgs/${t.orgId}/triggers/new`);
    await page().getByLabel('Name', { exact: true }).fill('hourly hello');
    await page().getByLabel('Type', { exact: true }).selectOption('cron');
    await page().getByLabel('Agent', { exact: true }).selectOption({ label: 'daemon-test' });
    await page().getByLabel('Workflow', { exact: true }).fill('hello');
    await page().getByLabel('Cron expression').fill('0 * * * *');
    await page().getByRole('button', { name: 'Create trigger' }).click();
    const refusal = page().getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.innerText()).toContain(
      'This organization has 1 enabled cron trigger, the most this server allows (DROVER_MAX_CRON_TRIGGERS_PER_ORG=1)',
    );
    expect(page().url()).toContain('/triggers/new');
    await page().goto(cronPage);

    // Edit: pause it.
    await page().getByRole('link', { name: 'Edit' }).click();
    await page().getByRole('heading', { name: 'Edit nightly hello' }).waitFor();
    expect(await page().getByLabel('Params of each run (JSON)').inputValue()).toContain('"who": "night shift"');
    await page().getByLabel('Enabled').uncheck();
    await page().getByRole('button', { name: 'Save trigger' }).click();
    await page().getByText('Paused: nothing runs until it is enabled again.').waitFor();

    // The list: every trigger, with the cron one's schedule.
    await page().getByRole('link', { name: 'All triggers' }).click();
    const row = page().getByRole('row', { name: 'nightly hello' });
    await row.waitFor();
    expect(await row.innerText()).toContain('paused');
    // Its schedule where the others say how they answer.
    expect(await row.innerText()).toContain('on 30 2 * * MON-FRI, Europe/Paris');
    expect(await row.innerText()).not.toContain('async');
    const webhookRow = await page().getByRole('row', { name: 'hello by hand' }).innerText();
    expect(webhookRow).toMatch(/webhook\s+daemon-test\s+hello\s+async/);
    await expectAccessible(page(), 'the Triggers page');
    await docScreenshot(page(), 'triggers');
  });

  it("refreshes the triggers list and a trigger's page while they are on screen", async () => {
    const triggers = (await t.owner.get<{ id: string; name: string }[]>(`/orgs/${t.orgId}/triggers`)).body;
    const cronId = triggers.find((x) => x.name === 'nightly hello')!.id;
    const change = async (body: Record<string, unknown>) =>
      expect((await t.owner.patch(`/orgs/${t.orgId}/triggers/${cronId}`, { body })).status).toBe(200);
    // The list (still open from the test above) shows the cron trigger enabled elsewhere: its next run.
    const row = page().getByRole('row', { name: 'nightly hello' });
    expect(await row.innerText()).toContain('paused');
    await change({ cronEnabled: true });
    await vi.waitFor(async () => expect(await row.innerText()).toMatch(/\d\d:30 UTC/), { timeout: 15_000 });
    expect(await row.innerText()).not.toContain('paused');

    // The trigger's page follows a new schedule.
    await row.getByRole('link', { name: 'nightly hello' }).click();
    const next = page().getByRole('list', { name: 'Next runs' }).getByRole('listitem');
    expect(await next.first().innerText()).toContain('02:30 Europe/Paris');
    await change({ cronExpression: '45 3 * * *' });
    await vi.waitFor(async () => expect(await next.first().innerText()).toContain('03:45 Europe/Paris'), {
      timeout: 15_000,
    });
    await change({ cronEnabled: false });

    // A webhook trigger's recent jobs gain a run made elsewhere.
    await page().goto(`/orgs/${t.orgId}/triggers/${webhookId}`);
    const recent = page().getByRole('table', { name: 'Recent jobs' });
    await recent.getByRole('row', { name: /^#1 hello/ }).waitFor();
    const run = await t.owner.post<{ jobId: string }>(`/orgs/${t.orgId}/triggers/${webhookId}/run`, {
      body: { params: { who: 'elsewhere' } },
    });
    expect(run.status).toBe(202);
    const { number } = (await t.owner.get<{ number: number }>(`/jobs/${run.body.jobId}`)).body;
    await recent.getByRole('row', { name: new RegExp(`^#${number} hello`) }).waitFor({ timeout: 15_000 });
  });

  it('hides delete and force from a member, who may still run', async () => {
    await addUser(t.owner, t.orgId, 'member@example.test', 'member');
    member = await openPage(browser, t.url);
    await member.page.goto(`/orgs/${t.orgId}/triggers/${webhookId}`);
    await member.page.waitForURL('**/login?next=*');
    await signIn(member.page, 'member@example.test', MEMBER_PASSWORD);
    await member.page.getByRole('heading', { name: 'hello by hand' }).waitFor();
    await member.page.getByRole('button', { name: 'Run now' }).waitFor();
    expect(await member.page.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    expect(await member.page.getByLabel(/Force/).count()).toBe(0);
    await expectAccessible(member.page, "a member's trigger page");
    expect(member.problems).toEqual([]);
  });

  it('lets an owner force a run with a reason, and delete a trigger after confirming', async () => {
    await page().goto(`/orgs/${t.orgId}/triggers/${webhookId}`);
    await page().getByLabel(/Force/).check();
    await page().getByLabel('Reason for forcing').fill('hotfix');
    await page().getByRole('button', { name: 'Run now' }).click();
    await page().waitForURL('**/api/jobs/*');
    const job = await t.owner.get(`/jobs/${page().url().split('/').pop()!}`);
    expect(job.body).toMatchObject({ forced: true, forceReason: 'hotfix' });

    await page().goto(`/orgs/${t.orgId}/triggers/${webhookId}`);
    await page().getByRole('button', { name: 'Delete trigger' }).click();
    const confirm = page().getByRole('group', { name: 'Delete hello by hand' });
    await expectAccessible(page(), 'the delete confirmation');
    await confirm.getByRole('button', { name: 'Delete for good' }).click();
    await page().waitForURL(`**/orgs/${t.orgId}/triggers`);
    await page().getByRole('row', { name: 'nightly hello' }).waitFor();
    expect(await page().getByRole('row', { name: 'hello by hand' }).count()).toBe(0);
    expect((await t.owner.get(`/orgs/${t.orgId}/triggers/${webhookId}`)).status).toBe(404);
    expect(owner.problems).toEqual([]);
  });
});
