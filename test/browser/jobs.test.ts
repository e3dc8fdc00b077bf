import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  killProcessesWithEnv,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
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
import { eventually, waitFor } from '../helpers/poll.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * The Jobs pages in a real Chromium against a real coordinator and a real agent: a slow job's log
 * arriving live on its page, cancelling it, running its trigger again, and the Jobs list with its
 * filters. Every page is checked with axe-core and for CSP violations.
 */

describe.skipIf(!CHROMIUM)('the Jobs pages in a browser', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let a: AgentStateDir;
  let daemon: DaemonProcess | undefined;
  let work: string;
  let gates: string;
  let trigger: { id: string; token: string };
  const jobIds: string[] = [];

  beforeAll(async () => {
    // The least cap of a job's stored log, so that a job can pass it quickly.
    t = await startTestCoordinator({ env: { DROVER_STREAM_PING_MS: '500', DROVER_JOB_LOG_MAX_BYTES: '65536' } });
    work = makeTempDir('drover-browser-jobs-');
    gates = path.join(work, 'gates');
    fs.mkdirSync(gates);
    a = await enrollAgentStateDir(t);
    // Says it waits, waits (at most a minute) for the file its `gate` param names, says it passed,
    // then waits for `<gate>.end` before it finishes.
    const wait = (file: string) => `for i in $(seq 1200); do [ -f "${gates}/${file}" ] && break; sleep 0.05; done`;
    const slow = [
      'name: slow',
      'description: waits for gate files',
      'cancelGrace: 1s',
      'params:',
      '  - {name: gate, type: string, required: true}',
      'steps:',
      `  - run: echo "waiting for $DROVER_PARAM_GATE"; ${wait('$DROVER_PARAM_GATE')}; echo "past $DROVER_PARAM_GATE"; ${wait('$DROVER_PARAM_GATE.end')}; echo "done with $DROVER_PARAM_GATE"`,
      '    shell: true',
    ];
    writeWorkflowFile(a.stateDir, 'slow', `${slow.join('\n')}\n`);
    // 2,500 lines of 43 bytes: past the cap of 64 KiB, and more than two pages of the job page.
    const chatty = [
      'name: chatty',
      'steps:',
      `  - run: seq -f "chatty %05g ${'.'.repeat(30)}" 2500`,
      '    shell: true',
    ];
    writeWorkflowFile(a.stateDir, 'chatty', `${chatty.join('\n')}\n`);
    daemon = startDaemonProcess(a.stateDir);
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/workflows`)).body.length === 2,
      30_000,
      'the agent to connect and report its workflow',
    );
    trigger = await runnableTrigger(t, a.agentId, 'slow');
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
  }, 60_000);
  afterAll(async () => {
    await stopDaemonProcess(daemon);
    await browser?.close();
    await t?.close();
    for (const id of jobIds) killProcessesWithEnv('DROVER_JOB_ID', id);
    if (a) fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true });
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });
  screenshotOnFailure(() => [owner?.page]);

  const page = (): Page => owner.page;
  const log = () => page().getByRole('log', { name: 'Job log' });
  const heading = () => page().getByRole('heading', { level: 1 });
  const jobRows = () => page().getByRole('table').getByRole('row');

  it('signs in on the job page a run returned, and shows the log of the running job as it arrives', async () => {
    const run = await t.api.post(`/triggers/${trigger.id}/run`, {
      token: trigger.token,
      body: { params: { gate: 'g1' } },
    });
    expect(run.status, run.text).toBe(202);
    jobIds.push(run.body.jobId);
    await page().goto(run.body.statusUrl);
    await page().waitForURL('**/login?next=*');
    await page().getByLabel('Email').fill(OWNER_EMAIL);
    await page().getByLabel('Password').fill(OWNER_PASSWORD);
    await page().getByRole('button', { name: 'Sign in' }).click();
    await page().waitForURL(`**${run.body.statusUrl}`);

    await log().getByText('waiting for g1').waitFor({ timeout: 20_000 });
    expect(await heading().innerText()).toContain('running');
    // The organization's first job: its number is in the title.
    expect(await heading().innerText()).toMatch(/^Job #1 slow/);
    // The issuer's email once the members have loaded (the source alone until then).
    await page().locator('dl.facts').getByText(`API call, API token of ${OWNER_EMAIL}`).waitFor();
    // Its agent, to the Agents page; its trigger, to the trigger's page.
    const facts = page().locator('dl.facts');
    const agentLink = facts.getByRole('link', { name: 'daemon-test' });
    await agentLink.waitFor();
    expect(await agentLink.getAttribute('href')).toBe(`/orgs/${t.orgId}/agents`);
    const triggerLink = facts.getByRole('link', { name: 'slow trigger' });
    await triggerLink.waitFor();
    expect(await triggerLink.getAttribute('href')).toBe(`/orgs/${t.orgId}/triggers/${trigger.id}`);
    expect(await facts.innerText()).toMatch(/Agent\s+daemon-test\s+Trigger\s+slow trigger/);
    expect(await page().getByRole('heading', { name: 'Log (live)' }).count()).toBe(1);
    // The address names no organization: the frame shows the job's.
    expect(await page().getByLabel('Organization').inputValue()).toBe(t.orgId);
    await page().getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).waitFor();
    // The next line exists only once the gate opens, after the page was drawn: it arrives live.
    fs.writeFileSync(path.join(gates, 'g1'), '');
    await log().getByText('past g1').waitFor({ timeout: 20_000 });
    expect(await log().innerText()).toMatch(/waiting for g1\n.*past g1/);
    await expectAccessible(page(), 'a running job');
    await docScreenshot(page(), 'job-running');
  });

  it('cancels the running job after a confirmation, and shows it end cancelled', async () => {
    await page().getByRole('button', { name: 'Cancel job' }).click();
    const confirm = page().getByRole('group', { name: 'Cancel the job' });
    await confirm.getByRole('button', { name: 'Keep it running' }).click();
    expect(await confirm.count()).toBe(0);
    await page().getByRole('button', { name: 'Cancel job' }).click();
    await expectAccessible(page(), 'the cancel confirmation');
    await confirm.getByRole('button', { name: 'Yes, cancel the job' }).click();
    await page().getByText('Cancel requested: the agent is stopping the job').waitFor();
    await heading().getByText('cancelled').waitFor({ timeout: 20_000 });
    await page().getByRole('heading', { name: 'Log', exact: true }).waitFor();
    // The cancel's word ends with the job: no "Cancel requested" beside a cancelled job.
    await page().getByText('Cancelled: its agent stopped the job.').waitFor();
    expect(await page().getByText('Cancel requested: the agent is stopping the job').count()).toBe(0);
    const facts = await page().locator('dl.facts').innerText();
    expect(facts).toContain('Cancel requested');
    expect(facts).toContain('cancelled: a user cancelled the job');
    expect(await page().getByRole('button', { name: 'Cancel job' }).count()).toBe(0);
    expect(await log().innerText()).not.toContain('done with g1');
    const api = await t.owner.get(`/jobs/${jobIds[0]}`);
    expect(api.body).toMatchObject({ status: 'cancelled', cancelRequestedAt: expect.any(String) });
  });

  it('runs the trigger again with the same params, and opens the new job', async () => {
    await page().getByRole('button', { name: 'Run again' }).click();
    await eventually(() => !page().url().endsWith(jobIds[0]!) && page().url(), 20_000, 'the new job page');
    const newId = page().url().split('/').pop()!;
    jobIds.push(newId);
    // The gate g1 is open already: the new job passes it and waits for g1.end.
    await log().getByText('past g1').waitFor({ timeout: 20_000 });
    await page().locator('dl.facts').getByText(`run by hand by ${OWNER_EMAIL}`).waitFor();
    expect(await page().getByLabel('Params').innerText()).toContain('"gate": "g1"');
    fs.writeFileSync(path.join(gates, 'g1.end'), '');
    await heading().getByText('success').waitFor({ timeout: 20_000 });
    await log().getByText('done with g1').waitFor();
    const job = await t.owner.get(`/jobs/${newId}`);
    expect(job.body).toMatchObject({
      source: 'manual',
      triggerId: trigger.id,
      params: { gate: 'g1' },
      status: 'success',
    });
    await expectAccessible(page(), 'a finished job');
  });

  it('shows the 409 in plain words when the job ended while the cancel waited for its confirmation', async () => {
    const run = await t.api.post(`/triggers/${trigger.id}/run`, {
      token: trigger.token,
      body: { params: { gate: 'g2' } },
    });
    jobIds.push(run.body.jobId);
    await page().goto(run.body.statusUrl);
    await log().getByText('waiting for g2').waitFor({ timeout: 20_000 });
    await page().getByRole('button', { name: 'Cancel job' }).click();
    fs.writeFileSync(path.join(gates, 'g2'), '');
    fs.writeFileSync(path.join(gates, 'g2.end'), '');
    await heading().getByText('success').waitFor({ timeout: 20_000 });
    await page().getByRole('button', { name: 'Yes, cancel the job' }).click();
    const alert = page().getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toMatch(/already ended \(success\)/);
  });

  it('lists the jobs newest first and filters them by status and by source', async () => {
    await page().getByRole('link', { name: 'All jobs' }).click();
    await page().getByRole('heading', { name: 'Jobs' }).waitFor();
    expect(page().url()).toBe(`${t.url}/orgs/${t.orgId}/jobs`);
    const nav = page().getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link', { name: 'Jobs' }).getAttribute('aria-current')).toBe('page');
    await eventually(async () => (await jobRows().count()) === 4, 20_000, 'three jobs and the header row');
    const rows = await jobRows().allInnerTexts();
    // Newest first, each with its number in the organization.
    expect(rows.slice(1).map((r) => /^#(\d+) slow/.exec(r)?.[1])).toEqual(['3', '2', '1']);
    expect(rows[1]).toContain('success');
    expect(rows[3]).toContain('cancelled');
    expect(rows[3]).toContain('API call');
    await expectAccessible(page(), 'the Jobs page');
    await docScreenshot(page(), 'jobs');

    await page().getByLabel('Status').selectOption('cancelled');
    await page().getByRole('button', { name: 'Filter' }).click();
    await page().waitForURL('**/jobs?status=cancelled');
    await eventually(async () => (await jobRows().count()) === 2, 20_000, 'only the cancelled job');
    expect(await jobRows().nth(1).innerText()).toContain('cancelled');

    await page().getByRole('button', { name: 'Clear' }).click();
    // The form is drawn anew from the address once it changed: a choice made before would go with the old form.
    await waitFor(async () => expect(await page().getByLabel('Status').inputValue()).toBe(''), { timeout: 10_000 });
    await page().getByLabel('Source').selectOption('manual');
    await page().getByRole('button', { name: 'Filter' }).click();
    await page().waitForURL('**/jobs?source=manual');
    await eventually(async () => (await jobRows().count()) === 2, 20_000, 'only the job run by hand');
    await jobRows().nth(1).getByText(`run by hand by ${OWNER_EMAIL}`).waitFor();
    const manual = await jobRows().nth(1).innerText();
    expect(manual).toContain('slow trigger');

    await page().getByLabel('Status').selectOption('failed');
    await page().getByRole('button', { name: 'Filter' }).click();
    await page().getByText('No job matches these filters.').waitFor();
    expect(owner.problems).toEqual([]);
  });

  it('reads a long log a page at a time, and says that the coordinator dropped its middle past the cap', async () => {
    const chatty = await runnableTrigger(t, a.agentId, 'chatty');
    const run = await t.api.post(`/triggers/${chatty.id}/run`, { token: chatty.token, body: {} });
    expect(run.status, run.text).toBe(202);
    jobIds.push(run.body.jobId);
    const stored = await eventually(
      async () => {
        const job = (await t.owner.get(`/jobs/${run.body.jobId}?logsLimit=0`)).body;
        return job.status === 'success' ? job : undefined;
      },
      20_000,
      'the long job to end',
    );
    // Capped: more than two pages of the job page were sent, fewer than two are kept.
    expect(stored.logsDropped).toBeGreaterThan(0);
    expect(stored.logsTotal).toBeGreaterThan(1000);
    expect(stored.logsTotal).toBeLessThan(2000);
    await page().goto(run.body.statusUrl);
    await heading().getByText('success').waitFor({ timeout: 20_000 });
    const lines = async () => (await log().innerText()).split('\n');
    await waitFor(async () => expect(await lines()).toHaveLength(1000), { timeout: 10_000 });
    expect((await lines())[0]).toMatch(/step 1\b.* of 1 started/);
    expect((await lines())[1]).toContain('chatty 00001');
    await page()
      .getByText(`1,000 of ${stored.logsTotal.toLocaleString('en-US')} lines shown.`)
      .waitFor();
    await page()
      .getByText(`${stored.logsDropped.toLocaleString('en-US')} lines from the middle of the log were not kept`)
      .waitFor();
    await expectAccessible(page(), 'the first page of a long log');
    await page().getByRole('button', { name: 'Show the next 1,000 lines' }).click();
    await waitFor(async () => expect(await lines()).toHaveLength(stored.logsTotal), { timeout: 10_000 });
    expect(
      await page()
        .getByRole('button', { name: /^Show the next/ })
        .count(),
    ).toBe(0);
    const all = await lines();
    expect(all.filter((l) => l.includes('dropped here'))).toEqual([
      expect.stringMatching(
        /\[system\] \[drover\] [\d,]+ lines \(.+\) dropped here: this job's log passed its limit of 64 KiB/,
      ),
    ]);
    expect(all.findLast((l) => l.includes(' chatty '))).toContain('chatty 02500');
    expect(all.at(-1)).toContain('job finished: success');
    expect(owner.problems).toEqual([]);
  });

  it("holds the Jobs page at a phone's width: its filters shrink to the screen, the page never scrolls sideways", async () => {
    // A trigger's name is an option of the Trigger filter: a long one made the select, and the page, wider.
    const long = await t.owner.patch(`/orgs/${t.orgId}/triggers/${trigger.id}`, {
      body: { name: 'slow trigger that waits for the gate files the test writes, named at length' },
    });
    expect(long.status, long.text).toBe(200);
    await page().setViewportSize({ width: 375, height: 800 });
    try {
      await page().goto(`/orgs/${t.orgId}/jobs`);
      await page().getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
      await page()
        .getByRole('option', { name: /named at length/ })
        .waitFor({ state: 'attached' });
      const widths = await page().evaluate(() => {
        const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
          .documentElement;
        return { scroll: root.scrollWidth, viewport: (globalThis as unknown as { innerWidth: number }).innerWidth };
      });
      expect(widths.scroll, 'the Jobs page scrolls sideways at 375 px').toBeLessThanOrEqual(widths.viewport);
      for (const select of await page().getByRole('form', { name: 'Filter jobs' }).getByRole('combobox').all()) {
        const box = (await select.boundingBox())!;
        expect(box.x + box.width).toBeLessThanOrEqual(375);
      }
    } finally {
      await page().setViewportSize({ width: 1280, height: 800 });
    }
  });
});
