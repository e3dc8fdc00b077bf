import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page, Route } from 'playwright-core';
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
import {
  makeTempDir,
  OWNER_EMAIL,
  OWNER_PASSWORD,
  startTestCoordinator,
  type TestCoordinator,
} from '../helpers/coordinator.js';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { finishBody } from '../helpers/jobs.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';
import { BATCH_POLL_MS, JOBS_REFRESH_MS, TRIGGERS_REFRESH_MS } from '../../dashboard/src/api/refresh.js';

/**
 * The Triggers pages in a real Chromium against a real coordinator and a real agent: create a
 * webhook trigger (a validation error shown at its field, then fixed), run it by hand from the
 * form generated from the workflow's params and land on the job page, a sync run that waits and
 * shows its result, a cron trigger's schedule, edit, a member's view, delete. Then a trigger on a
 * label selector made with the form (its live preview of the agents it matches), run by hand into
 * a batch whose page follows its jobs (run by signed agent clients) to the end, a batch cancelled
 * from its page, and the Batches page. Every page is checked with axe-core and for CSP violations.
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
    // Its refreshes come when a test moves its clock (the lists and pages that follow changes).
    owner = await openPage(browser, t.url, { clock: true });
    await owner.page.goto('/login');
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD);
    await owner.page.waitForURL(`**/orgs/${t.orgId}`);
    // Both workflows reported: the forms below offer them.
    await waitFor(
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
    // A name pasted too long is kept whole and refused at its field, not cut to fit without a word;
    // 200 emoji (200 characters, a name the API takes) are kept too (the browser's maxlength counts
    // UTF-16 units and kept 127 of them).
    const name = page().getByLabel('Name', { exact: true });
    await name.fill('😀'.repeat(200));
    expect([...(await name.inputValue())]).toHaveLength(200);
    await name.fill('n'.repeat(256));
    await page().getByRole('button', { name: 'Create trigger' }).click();
    expect(await page().locator('#f-name-error').innerText()).toBe('must be at most 255 characters long');
    expect(await name.inputValue()).toHaveLength(256);
    await name.fill('hello by hand');
    await page().getByLabel('Workflow', { exact: true }).fill('hello');
    // No agent chosen yet: the page says so at the field, in words (not the pattern of an id).
    await page().getByRole('button', { name: 'Create trigger' }).click();
    expect(await page().locator('#f-agentId-error').innerText()).toBe('is required: or name agents with agentSelector');
    await page().getByLabel('Agent', { exact: true }).selectOption({ label: 'daemon-test' });
    // A sync wait the browser cannot read ("1e": the input's value is empty) is refused at its
    // input, not sent as 0 for the API to refuse as out of range.
    await page().getByLabel('Answer').selectOption('sync');
    const wait = page().getByLabel('Sync wait (ms)');
    await wait.fill('');
    await wait.pressSequentially('1e');
    await page().getByRole('button', { name: 'Create trigger' }).click();
    expect(await page().locator('#f-responseTimeoutMs-error').innerText()).toBe('must be a number, such as 30000');
    // A sync wait typed, then the answer set back to async: the hidden wait is not sent.
    await wait.fill('500');
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

    // A stored ref with a quote stays one word of the pasted command: a shell whose curl prints its
    // arguments reads them back whole, and runs nothing of the ref.
    const ref = "main'; touch PWNED; echo '";
    const patched = await t.owner.patch(`/orgs/${t.orgId}/triggers/${webhookId}`, { body: { allowedRefs: [ref] } });
    expect(patched.status, patched.text).toBe(200);
    try {
      await page().reload();
      const snippet = page().getByLabel('Example curl');
      await waitFor(async () => expect(await snippet.innerText()).toContain('touch PWNED'), { timeout: 10_000 });
      const pasted = await snippet.innerText();
      const dir = makeTempDir('drover-browser-curl-');
      const printed = execFileSync('sh', ['-c', `curl() { printf '%s\\0' "$@"; }\n${pasted}`], { cwd: dir });
      const args = printed.toString().split('\0').slice(0, -1);
      expect(args.slice(0, -1)).toEqual([
        '-s',
        '-X',
        'POST',
        url,
        '-H',
        'authorization: Bearer <API token>',
        '-H',
        'content-type: application/json',
        '-d',
      ]);
      expect(JSON.parse(args.at(-1)!)).toMatchObject({ ref, params: {} });
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      await t.owner.patch(`/orgs/${t.orgId}/triggers/${webhookId}`, { body: { allowedRefs: null } });
      await page().reload();
    }
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
    // A double-click sends one run: the second click comes before the button is drawn disabled.
    await page().getByRole('button', { name: 'Run now' }).dblclick();
    await page().waitForURL('**/api/jobs/*');
    await page().getByText('success', { exact: true }).waitFor({ timeout: 20_000 });
    expect(await page().getByRole('main').innerText()).toContain('Hello, Drover!');
    const jobId = page().url().split('/').pop()!;
    const job = await t.owner.get(`/jobs/${jobId}`);
    expect(job.body).toMatchObject({ source: 'manual', triggerId: webhookId, params: { who: 'Drover' }, number: 1 });
    const jobs = await t.owner.get<{ id: string }[]>(`/orgs/${t.orgId}/jobs?triggerId=${webhookId}`);
    expect(jobs.body.map((j) => j.id)).toEqual([jobId]);
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
    // The form follows the workflow's definition, read after the trigger's.
    await target.locator('option', { hasText: 'production' }).waitFor({ state: 'attached' });
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
    await tag.fill('');
    // A number the browser cannot read ("1e": the input's value is empty) is refused at its input,
    // not left out for the workflow's default to run instead.
    await replicas.fill('');
    await replicas.pressSequentially('1e');
    await page().getByRole('button', { name: 'Run now' }).click();
    expect(await page().locator('#param-replicas-error').innerText()).toBe('must be a number, such as 30');
    expect(runs).toEqual([]);
    page().off('request', onRequest);
    await replicas.fill('2');

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
    // The page's clock moved by the refresh interval: the refresh comes at once.
    const refresh = () => page().clock.runFor(TRIGGERS_REFRESH_MS);
    // The list (still open from the test above) shows the cron trigger enabled elsewhere: its next run.
    const row = page().getByRole('row', { name: 'nightly hello' });
    expect(await row.innerText()).toContain('paused');
    await change({ cronEnabled: true });
    await refresh();
    await waitFor(async () => expect(await row.innerText()).toMatch(/\d\d:30 UTC/));
    expect(await row.innerText()).not.toContain('paused');

    // The trigger's page follows a new schedule.
    await row.getByRole('link', { name: 'nightly hello' }).click();
    const next = page().getByRole('list', { name: 'Next runs' }).getByRole('listitem');
    expect(await next.first().innerText()).toContain('02:30 Europe/Paris');
    await change({ cronExpression: '45 3 * * *' });
    await refresh();
    await waitFor(async () => expect(await next.first().innerText()).toContain('03:45 Europe/Paris'));
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
    await refresh();
    await recent.getByRole('row', { name: new RegExp(`^#${number} hello`) }).waitFor();
  });

  /** The edit form of `nightly hello` opened on the page; the trigger's address and a read of it through the API. */
  const openNightlyForm = async () => {
    const triggers = (await t.owner.get<{ id: string; name: string }[]>(`/orgs/${t.orgId}/triggers`)).body;
    const trigger = `/orgs/${t.orgId}/triggers/${triggers.find((x) => x.name === 'nightly hello')!.id}`;
    const read = async () => (await t.owner.get<Record<string, unknown>>(trigger)).body;
    await page().goto(`${trigger}/edit`);
    await page().getByRole('heading', { name: 'Edit nightly hello' }).waitFor();
    return { trigger, read };
  };

  it('leaves the operator on the page they went to while a save was on its way, and saves it', async () => {
    const { trigger, read } = await openNightlyForm();
    let held: Route | undefined;
    await page().route(`**/v1${trigger}`, async (route) => {
      if (route.request().method() === 'PATCH') held = route;
      else await route.continue();
    });
    await page().getByLabel('While the previous run is going').selectOption('queue');
    await page().getByRole('button', { name: 'Save trigger' }).click();
    await waitFor(() => expect(held).toBeDefined());
    await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Triggers' }).click();
    await page().getByRole('heading', { name: 'Triggers', level: 1 }).waitFor();
    // The save's end refreshes the list: by then the page would have been taken to the trigger.
    const refreshed = page().waitForRequest((r) => r.method() === 'GET' && /\/triggers(\?|$)/.test(r.url()));
    await held!.continue();
    await refreshed;
    await page().unroute(`**/v1${trigger}`);
    expect(await read()).toMatchObject({ cronOverlapPolicy: 'queue' });
    await page().getByRole('row', { name: 'nightly hello' }).waitFor();
    expect(new URL(page().url()).pathname).toBe(`/orgs/${t.orgId}/triggers`);
    expect(owner.problems).toEqual([]);
  });

  it('saves nothing over a change made elsewhere since the form opened, and makes its changes onto the trigger as it is now', async () => {
    const { trigger, read } = await openNightlyForm();
    const zone = page().getByLabel('Time zone');
    expect(await zone.inputValue()).toBe('Europe/Paris');
    // Another tab saves a new zone; this form, opened before, changes the overlap policy.
    expect((await t.owner.patch(trigger, { body: { cronTimezone: 'Asia/Tokyo' } })).status).toBe(200);
    await page().getByLabel('While the previous run is going').selectOption('skip');
    await page().getByRole('button', { name: 'Save trigger' }).click();
    const alert = page().getByRole('alert').filter({ hasText: 'changed elsewhere' });
    await alert.waitFor();
    expect(await read()).toMatchObject({ cronTimezone: 'Asia/Tokyo', cronOverlapPolicy: 'queue' });
    await expectAccessible(page(), 'the form refused over a change made elsewhere');

    // The other tab's zone, with this form's overlap policy made onto it, shown to check before saving.
    await alert.getByRole('button', { name: 'Make my changes onto it as it is now' }).click();
    await waitFor(async () => expect(await zone.inputValue()).toBe('Asia/Tokyo'));
    expect(await page().getByLabel('While the previous run is going').inputValue()).toBe('skip');
    expect(await alert.count()).toBe(0);
    expect(await page().getByRole('status').filter({ hasText: 'with the fields you changed' }).count()).toBe(1);
    expect(await read()).toMatchObject({ cronTimezone: 'Asia/Tokyo', cronOverlapPolicy: 'queue' });
    await page().getByRole('button', { name: 'Save trigger' }).click();
    await page().waitForURL((url) => url.pathname === trigger);
    expect(await read()).toMatchObject({ cronTimezone: 'Asia/Tokyo', cronOverlapPolicy: 'skip' });
    expect(owner.problems).toEqual([]);
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

  describe('triggers on a label selector and their batches', () => {
    const fleet: Record<string, TestAgent> = {};
    let selectorId: string;
    let firstBatch: string;

    const move = (agent: TestAgent, jobId: string, step: string, body?: unknown) =>
      agent.request('POST', `/v1/agent/jobs/${jobId}/${step}`, body);
    const step = async (agent: TestAgent, jobId: string, what: string, body?: unknown) =>
      expect((await move(agent, jobId, what, body)).status).toBe(200);
    const batchJobs = async (batchId: string) =>
      (await t.owner.get<{ jobs: { agentName: string; jobId: string }[] }>(`/orgs/${t.orgId}/batches/${batchId}`)).body
        .jobs;
    const jobOn = async (batchId: string, name: string) =>
      (await batchJobs(batchId)).find((j) => j.agentName === name)!.jobId;
    const heading = () => page().getByRole('heading', { level: 1 });
    /** A batch's page reads it again: its clock moved by its poll's interval. */
    const poll = () => page().clock.runFor(BATCH_POLL_MS);
    const jobRow = (name: string) =>
      page().getByRole('table', { name: 'Jobs' }).getByRole('row', { name, exact: true });

    beforeAll(async () => {
      // Signed agent clients: three gateways (gw-c without the workflow, in another site) and a kiosk.
      for (const [name, labels, workflows] of [
        ['gw-a', { role: 'gateway', site: 'berlin' }, ['rotate']],
        ['gw-b', { role: 'gateway', site: 'berlin' }, ['rotate']],
        ['gw-c', { role: 'gateway', site: 'munich' }, ['other']],
        ['kiosk', { role: 'kiosk', site: 'berlin' }, ['rotate']],
      ] as const) {
        const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: name });
        expect((await t.owner.patch(`/orgs/${t.orgId}/agents/${agent.agentId}`, { body: { name } })).status).toBe(200);
        const reported = await agent.request('PUT', '/v1/agent/labels', {
          labels: { os: 'linux', arch: 'x64', ...labels },
        });
        expect(reported.status, reported.text).toBe(200);
        expect((await agent.putWorkflows(workflows.map((w) => workflow(w)))).status).toBe(200);
        fleet[name] = agent;
      }
    });

    it('creates one with the form: the preview names the agents it matches and those lacking the workflow; refusals sit under their fields', async () => {
      await page().goto(`/orgs/${t.orgId}/triggers/new`);
      await page().getByLabel('Name', { exact: true }).fill('rotate gateways');
      await page().getByRole('radio', { name: 'the agents matching a label selector' }).check();
      expect(await page().getByLabel('Agent', { exact: true }).count()).toBe(0);
      // One workflow only, and the form says why.
      await page()
        .getByText('a trigger on a selector runs one workflow, named below, on each agent it matches')
        .waitFor();
      expect(
        await page()
          .getByRole('option', { name: /any workflow of the agent/ })
          .isDisabled(),
      ).toBe(true);
      expect(await page().getByLabel('Fan-out').locator('option').allInnerTexts()).toEqual([
        'all: one job per agent (a batch)',
        'one: one job on one of them (a pool)',
      ]);

      // The coordinator's refusals, each under its field.
      const selector = page().getByLabel('Label selector', { exact: true });
      await selector.fill(' ');
      await page().getByLabel('Max parallel (optional)').fill('0');
      await page().getByLabel('Workflow', { exact: true }).fill('rotate');
      await page().getByRole('button', { name: 'Create trigger' }).click();
      await page().locator('#f-maxParallel-error').waitFor();
      expect(await page().getByLabel('Max parallel (optional)').getAttribute('aria-invalid')).toBe('true');
      expect(await page().getByRole('alert').innerText()).toContain('Some fields need a change');
      // Words are not taken for none (all at once), nor 0x10 for 16.
      await page().getByLabel('Max parallel (optional)').fill('0x10');
      await page().getByRole('button', { name: 'Create trigger' }).click();
      await page().locator('#f-maxParallel-error').getByText('must be a number, such as 5').waitFor();
      await page().getByLabel('Max parallel (optional)').fill('');
      await page().getByRole('button', { name: 'Create trigger' }).click();
      await page().locator('#f-agentSelector-refusal').getByText('must select by at least one label').waitFor();
      expect(await selector.getAttribute('aria-invalid')).toBe('true');

      // A selector that does not parse is said so in the page, at its position, before any request.
      await selector.fill('role in gateway');
      await page().getByText("Not a label selector: at position 8: expected '(', found 'gateway'").waitFor();
      const preview = page().getByRole('status').filter({ hasText: /match/ });
      await selector.fill('role=gateway');
      await waitFor(async () =>
        expect(await preview.innerText()).toBe(
          '3 agents match now: gw-a, gw-b and gw-c. gw-c does not report the workflow rotate: its job would be rejected.',
        ),
      );
      await page().getByLabel('Workflow', { exact: true }).fill('other');
      await waitFor(async () =>
        expect(await preview.innerText()).toContain('2 agents (gw-a and gw-b) do not report the workflow other'),
      );
      await page().getByLabel('Workflow', { exact: true }).fill('rotate');
      await expectAccessible(page(), 'the trigger form on a selector');
      await docScreenshot(page(), 'trigger-selector-form');
      await page().getByLabel('Max parallel (optional)').fill('2');
      await page().getByRole('button', { name: 'Create trigger' }).click();
      await page().getByRole('heading', { name: 'rotate gateways' }).waitFor();
      selectorId = page().url().split('/').pop()!;
      await page().getByText('3 agents match now: gw-a, gw-b and gw-c.').waitFor();
      await expectAccessible(page(), "a selector trigger's page");
      await docScreenshot(page(), 'trigger-selector');
      const created = await t.owner.get(`/orgs/${t.orgId}/triggers/${selectorId}`);
      expect(created.body).toMatchObject({
        agentId: null,
        agentSelector: 'role=gateway',
        fanout: 'all',
        maxParallel: 2,
        scopeType: 'workflow',
        workflowName: 'rotate',
      });
      const settings = page().getByRole('definition');
      await settings.filter({ hasText: 'all: one job per agent (a batch)' }).waitFor();
      await settings.filter({ hasText: '2 jobs of a batch at a time' }).waitFor();
      await settings.filter({ hasText: '3 agents match now: gw-a, gw-b and gw-c.' }).waitFor();

      // The list says where it runs in place of an agent.
      await page().getByRole('link', { name: 'All triggers' }).click();
      const row = page().getByRole('row', { name: 'rotate gateways' });
      await row.waitFor();
      await waitFor(async () =>
        expect(await row.innerText()).toMatch(
          /webhook\s+agents matching role=gateway\s+a batch: one job per agent, 2 at a time · 3 match now\s+rotate\s+async/,
        ),
      );
      await expectAccessible(page(), 'the Triggers page with a selector trigger');
    });

    it('runs it by hand into a batch: its page has one row per agent and follows the jobs live to the end', async () => {
      await page().getByRole('link', { name: 'rotate gateways' }).click();
      await page().getByText('A run makes a batch: one job on each agent the selector matches then').waitFor();
      await page().getByRole('button', { name: 'Run now' }).click();
      await page().waitForURL('**/api/batches/*');
      firstBatch = page().url().split('/').pop()!;
      await waitFor(async () => expect(await heading().innerText()).toBe('Batch #1 rotate pending'));
      for (const [name, status] of [
        ['gw-a', 'pending'],
        ['gw-b', 'pending'],
        ['gw-c', 'rejected'],
      ]) {
        await jobRow(name!).getByText(status!, { exact: true }).waitFor();
      }
      expect(await jobRow('gw-c').innerText()).toContain('Agent gw-c does not report the workflow `rotate`');
      expect(await jobRow('gw-a').getByRole('link', { name: 'gw-a', exact: true }).getAttribute('href')).toBe(
        `/orgs/${t.orgId}/agents/${fleet['gw-a']!.agentId}`,
      );
      expect(await page().getByRole('definition').filter({ hasText: 'role=gateway' }).count()).toBe(1);
      await page().getByRole('link', { name: 'rotate gateways' }).waitFor();
      await page()
        .getByRole('list', { name: /^Jobs by status: 1 of 3 jobs ended/ })
        .waitFor();

      // The agents take their jobs; the page follows each move.
      const a = await jobOn(firstBatch, 'gw-a');
      const b = await jobOn(firstBatch, 'gw-b');
      await step(fleet['gw-a']!, a, 'accept');
      await step(fleet['gw-a']!, a, 'start');
      await poll();
      await jobRow('gw-a').getByText('running', { exact: true }).waitFor();
      await waitFor(async () => expect(await heading().innerText()).toBe('Batch #1 rotate running'));
      const legend = page()
        .getByRole('list', { name: /^Jobs by status/ })
        .getByRole('listitem');
      expect(await legend.allInnerTexts()).toEqual([
        '0 succeeded',
        '0 failed',
        '1 running',
        '1 pending',
        '1 rejected',
        '0 cancelled',
      ]);
      await expectAccessible(page(), 'a running batch');
      await docScreenshot(page(), 'batch-running');

      // A read in which one job changed redraws its row only (a batch of thousands of agents polls
      // too): the others keep what React drew them with, and a running job's duration still counts.
      const drawn = () =>
        page().evaluate(() => {
          type Row = { getAttribute(name: string): string | null } & Record<string, unknown>;
          const w = globalThis as unknown as {
            drawnRows?: Map<string, unknown>;
            document: { querySelectorAll(selector: string): Iterable<Row> };
          };
          const before = w.drawnRows;
          w.drawnRows = new Map();
          const redrawn: string[] = [];
          for (const row of w.document.querySelectorAll('table.batch-jobs tbody tr')) {
            // What React drew the row with: a new object each time it draws it again.
            const props = row[Object.keys(row).find((k) => k.startsWith('__reactProps$'))!];
            const name = row.getAttribute('aria-label')!;
            if (before && before.get(name) !== props) redrawn.push(name);
            w.drawnRows.set(name, props);
          }
          return redrawn;
        });
      const running = () => jobRow('gw-a').getByRole('cell').last().innerText();
      await drawn();
      const ranFor = await running();
      await step(fleet['gw-b']!, b, 'accept');
      await poll();
      await jobRow('gw-b').getByText('queued', { exact: true }).waitFor();
      await waitFor(async () => expect(await running()).not.toBe(ranFor));
      expect(await drawn()).toEqual(['gw-b']);

      await step(fleet['gw-a']!, a, 'finish', finishBody());
      await step(fleet['gw-b']!, b, 'start');
      await step(
        fleet['gw-b']!,
        b,
        'finish',
        finishBody({ status: 'failed', exitCode: 3, errorMessage: 'step 1 failed' }),
      );
      await poll();
      await waitFor(async () => expect(await heading().innerText()).toBe('Batch #1 rotate partial'));
      expect(await jobRow('gw-a').innerText()).toMatch(/^gw-a\s+#\d+\s+success\s+0\s/);
      expect(await jobRow('gw-b').innerText()).toMatch(/^gw-b\s+#\d+\s+failed\s+3\s+step 1 failed\s/);
      await page().getByText('3 of 3 jobs ended. Every job ended.').waitFor();
      expect(await page().getByRole('button', { name: 'Cancel batch' }).count()).toBe(0);
      // Ended: the page reads the batch no more, over five of its polls' intervals.
      const read = page().waitForRequest((r) => r.url().includes(`/v1/batches/${firstBatch}`), { timeout: 1_000 });
      await page().clock.runFor(5 * BATCH_POLL_MS);
      await expect(read).rejects.toThrow(/Timeout/);

      // A job of it says so, and leads back; the Jobs list shows the batch's jobs only.
      await jobRow('gw-b')
        .getByRole('link', { name: /^Job #\d+ on gw-b$/ })
        .click();
      await page().waitForURL('**/api/jobs/*');
      await page().getByRole('link', { name: 'batch #1' }).click();
      await page().waitForURL(`**/api/batches/${firstBatch}`);
      await page().getByRole('link', { name: 'These jobs in the Jobs list' }).click();
      await page().getByText('Only the jobs of batch #1.').waitFor();
      await waitFor(async () => expect(await page().getByRole('table').getByRole('row').count()).toBe(4));
      expect(page().url()).toContain(`batchId=${firstBatch}`);
      await expectAccessible(page(), 'the jobs of a batch');
    });

    it('cancels a batch from its page after confirming: the held job at once, the running one once its agent stopped it', async () => {
      const created = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
        body: {
          name: 'berlin gateways',
          agentSelector: 'role=gateway,site=berlin',
          fanout: 'all',
          maxParallel: 1,
          scopeType: 'workflow',
          workflowName: 'rotate',
          responseMode: 'async',
        },
      });
      expect(created.status, created.text).toBe(201);
      const run = await t.owner.post<{ batchId: string; statusUrl: string }>(
        `/orgs/${t.orgId}/triggers/${created.body.id}/run`,
      );
      expect(run.status, run.text).toBe(202);
      const batchId = run.body.batchId;
      const a = await jobOn(batchId, 'gw-a');
      await step(fleet['gw-a']!, a, 'accept');
      await step(fleet['gw-a']!, a, 'start');

      await page().goto(run.body.statusUrl);
      await waitFor(async () => expect(await heading().innerText()).toBe('Batch #2 rotate running'));
      await jobRow('gw-a').getByText('running', { exact: true }).waitFor();
      await page().getByRole('button', { name: 'Cancel batch' }).click();
      const confirm = page().getByRole('group', { name: 'Cancel the batch' });
      expect(await confirm.innerText()).toContain('Cancel the 2 unfinished jobs of this batch?');
      await expectAccessible(page(), 'the cancel confirmation of a batch');
      await confirm.getByRole('button', { name: 'Yes, cancel the batch' }).click();
      await jobRow('gw-b').getByText('cancelled', { exact: true }).waitFor();
      await page()
        .getByText('Cancel requested: the running job ends cancelled once its agent has stopped it.')
        .waitFor();
      expect(await heading().innerText()).toBe('Batch #2 rotate running');

      // The agent stops the job: the batch ends cancelled.
      await step(fleet['gw-a']!, a, 'finish', finishBody({ status: 'cancelled', exitCode: null }));
      await poll();
      await waitFor(async () => expect(await heading().innerText()).toBe('Batch #2 rotate cancelled'));
      // The audit log names the batch, linked to its page.
      await page().goto(`/orgs/${t.orgId}/audit?action=batch.cancel`);
      const entry = page().getByRole('row', { name: /cancelled the unfinished jobs of the batch rotate #2/ });
      expect(await entry.getByRole('link', { name: 'rotate #2' }).getAttribute('href')).toBe(`/api/batches/${batchId}`);
    });

    it('lists the batches from the navigation, newest first, with their status and counts', async () => {
      await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Batches' }).click();
      await page().getByRole('heading', { name: 'Batches' }).waitFor();
      const rows = page().getByRole('table').getByRole('row');
      await waitFor(async () => expect(await rows.count()).toBe(3));
      // The triggers' names are read by id, after the batches: they come once read.
      await waitFor(async () =>
        expect(await rows.nth(1).innerText()).toMatch(
          /^#2 rotate\s+cancelled\s+2 cancelled\s+berlin gateways\s+run by hand\s+role=gateway,site=berlin\s/,
        ),
      );
      await waitFor(async () =>
        expect(await rows.nth(2).innerText()).toMatch(
          /^#1 rotate\s+partial\s+1 succeeded\s+1 failed\s+1 rejected\s+rotate gateways\s+run by hand\s+role=gateway\s/,
        ),
      );
      await expectAccessible(page(), 'the Batches page');
      await docScreenshot(page(), 'batches');
      await rows.nth(2).getByRole('link', { name: '#1 rotate' }).click();
      await page().waitForURL(`**/api/batches/${firstBatch}`);
      // Opened afresh, the page (whose address names no organization) has its organization's frame.
      await page().reload();
      await page().getByRole('heading', { name: 'Batch #1 rotate partial' }).waitFor();
      await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Batches' }).waitFor();
    });

    it("runs a batch's job again: its trigger makes a new batch, whose page opens", async () => {
      await page().goto(`/api/jobs/${await jobOn(firstBatch, 'gw-a')}`);
      await page().getByRole('link', { name: 'batch #1' }).waitFor();
      await page().getByRole('button', { name: 'Run again' }).click();
      await page().waitForURL((url) => url.pathname.startsWith('/api/batches/') && !url.pathname.endsWith(firstBatch));
      await waitFor(async () => expect(await heading().innerText()).toBe('Batch #3 rotate pending'));
      await jobRow('gw-c').getByText('rejected', { exact: true }).waitFor();
    });

    it("shows a selector trigger's recent batches on its page, followed live, each linked to its page", async () => {
      const [third] = (
        await t.owner.get<{ id: string }[]>(`/orgs/${t.orgId}/batches?triggerId=${selectorId}&limit=1`)
      ).body.map((b) => b.id);
      await page().goto(`/orgs/${t.orgId}/triggers/${selectorId}`);
      const rows = page().getByRole('table', { name: 'Recent batches' }).getByRole('row');
      // Its own batches only, newest first (#2 is another trigger's).
      await waitFor(async () => expect(await rows.count()).toBe(3));
      expect(await rows.nth(1).innerText()).toMatch(/^#3 rotate\s+pending\s+2 pending\s+1 rejected\s+\S/);
      expect(await rows.nth(2).innerText()).toMatch(/^#1 rotate\s+partial\s+1 succeeded\s+1 failed\s+1 rejected\s+\S/);
      await expectAccessible(page(), "a selector trigger's page with its batches");

      // Its agents run #3's jobs: the row follows, without a reload.
      for (const name of ['gw-a', 'gw-b']) {
        const jobId = await jobOn(third!, name);
        await step(fleet[name]!, jobId, 'accept');
        await step(fleet[name]!, jobId, 'start');
        await step(fleet[name]!, jobId, 'finish', finishBody());
      }
      await page().clock.runFor(JOBS_REFRESH_MS);
      await waitFor(async () =>
        expect(await rows.nth(1).innerText()).toMatch(/^#3 rotate\s+partial\s+2 succeeded\s+1 rejected\s/),
      );
      await docScreenshot(page(), 'trigger-batches');

      await page().getByRole('link', { name: 'All batches of this trigger' }).click();
      await page().getByText('Only the batches of rotate gateways.').waitFor();
      const listed = page().getByRole('table').getByRole('row');
      await waitFor(async () => expect(await listed.count()).toBe(3));
      expect(await listed.nth(2).innerText()).toMatch(/^#1 rotate\s+partial\s/);
      await expectAccessible(page(), 'the Batches page of one trigger');
      await page().getByRole('link', { name: 'rotate gateways' }).click();
      await rows.nth(2).getByRole('link', { name: '#1 rotate' }).click();
      await page().waitForURL(`**/api/batches/${firstBatch}`);
      await page().getByRole('heading', { name: 'Batch #1 rotate partial' }).waitFor();
    });

    it('edits a selector trigger back onto one agent: the selector is gone', async () => {
      await page().goto(`/orgs/${t.orgId}/triggers/${selectorId}/edit`);
      await page().getByRole('heading', { name: 'Edit rotate gateways' }).waitFor();
      expect(await page().getByRole('radio', { name: 'the agents matching a label selector' }).isChecked()).toBe(true);
      expect(await page().getByLabel('Label selector', { exact: true }).inputValue()).toBe('role=gateway');
      expect(await page().getByLabel('Max parallel (optional)').inputValue()).toBe('2');
      await page().getByRole('radio', { name: 'one agent' }).check();
      await page().getByLabel('Agent', { exact: true }).selectOption({ label: 'gw-a' });
      await page().getByRole('button', { name: 'Save trigger' }).click();
      await page()
        .getByRole('definition')
        .filter({ hasText: /^gw-a$/ })
        .waitFor();
      // On one agent, a run makes a job, not a batch: the page lists its jobs only.
      await page().getByRole('heading', { name: 'Recent jobs' }).waitFor();
      expect(await page().getByRole('heading', { name: 'Recent batches' }).count()).toBe(0);
      const saved = await t.owner.get(`/orgs/${t.orgId}/triggers/${selectorId}`);
      expect(saved.body).toMatchObject({
        agentId: fleet['gw-a']!.agentId,
        agentSelector: null,
        fanout: null,
        maxParallel: null,
      });
      expect(owner.problems).toEqual([]);
    });

    it("shows a scheduled batch among a selector cron trigger's occurrences, linked to its page", async () => {
      // Disabled: the server allows one enabled cron trigger here; the occurrence is fired by hand.
      const created = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
        body: {
          name: 'nightly gateways',
          type: 'cron',
          cronExpression: '0 3 * * *',
          cronEnabled: false,
          agentSelector: 'role=gateway',
          fanout: 'all',
          scopeType: 'workflow',
          workflowName: 'rotate',
        },
      });
      expect(created.status, created.text).toBe(201);
      const fired = await t.coordinator.ctx.runs.runOccurrence({
        orgId: t.orgId,
        triggerId: created.body.id,
        scheduledAt: '2026-11-28T03:00:00.000Z',
        stillDue: () => true,
      });
      expect(fired).toMatchObject({ outcome: 'batch_created' });
      const { batchId } = fired as { batchId: string };
      const number = (await t.owner.get<{ number: number }>(`/batches/${batchId}`)).body.number;

      // The occurrence made a batch (its jobId is null): it is named and linked, not "job gone".
      await page().goto(`/orgs/${t.orgId}/triggers/${created.body.id}`);
      const row = page().getByRole('table').filter({ hasText: 'Scheduled' }).getByRole('row').nth(1);
      await row.getByRole('link', { name: `batch #${number}` }).waitFor();
      expect(await row.innerText()).not.toContain('job gone');
      await page().getByRole('link', { name: 'All triggers' }).click();
      const listed = page().getByRole('row', { name: 'nightly gateways' });
      await listed.getByRole('link', { name: `batch #${number}` }).click();
      await page().waitForURL(`**/api/batches/${batchId}`);
      expect((await t.owner.post(`/batches/${batchId}/cancel`)).status).toBe(200);
    });
  });

  it('breaks a name of 255 characters rather than widen a page: the columns and buttons after it stay in view', async () => {
    const agent = await enrollTestAgent(t.owner, t.orgId, { hostname: 'long' });
    const agentName = 'a'.repeat(255);
    expect(
      (await t.owner.patch(`/orgs/${t.orgId}/agents/${agent.agentId}`, { body: { name: agentName } })).status,
    ).toBe(200);
    const created = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 't'.repeat(255),
        agentId: agent.agentId,
        scopeType: 'workflow',
        workflowName: 'hello',
        responseMode: 'async',
      },
    });
    expect(created.status, created.text).toBe(201);
    const sideways = () =>
      page().evaluate(() => {
        const root = (
          globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }
        ).document.documentElement;
        return root.scrollWidth - root.clientWidth;
      });
    for (const [path, inView] of [
      [`/orgs/${t.orgId}/agents/${agent.agentId}`, page().getByRole('button', { name: 'Edit labels' })],
      [`/orgs/${t.orgId}/triggers/${created.body.id}`, page().getByRole('link', { name: 'Edit', exact: true })],
      [`/orgs/${t.orgId}/agents`, page().getByRole('button', { name: `Revoke ${agentName}` })],
      [
        `/orgs/${t.orgId}/triggers`,
        page()
          .getByRole('row', { name: 't'.repeat(255) })
          .getByRole('cell')
          .last(),
      ],
      [`/orgs/${t.orgId}/api-tokens`, page().getByRole('button', { name: 'Issue token' })],
    ] as const) {
      await page().goto(path);
      await inView.waitFor();
      expect(await sideways(), `sideways scroll of ${path}`).toBe(0);
      const box = (await inView.boundingBox())!;
      expect(box.x + box.width, `what follows the name on ${path}`).toBeLessThanOrEqual(1280);
    }
  });
});
