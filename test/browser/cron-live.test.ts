import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrollAgentStateDir,
  startDaemonProcess,
  stopDaemonProcess,
  writeWorkflowFile,
  type AgentStateDir,
  type DaemonProcess,
} from '../helpers/agent-daemon.js';
import { CHROMIUM, launchBrowser, openPage, screenshotOnFailure, type TestPage } from '../helpers/browser.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { eventually } from '../helpers/poll.js';
import { MINUTE } from '../helpers/trigger-runs.js';

/**
 * A cron trigger's page left open while its schedule fires, in a real Chromium against a real
 * coordinator (its clock moved so that the next minute starts in a few seconds) and a real
 * agent: without a reload, the occurrence appears with its job's number and status, the next
 * run moves on, and the job is among the trigger's recent jobs.
 */

/** The coordinator's clock: the system's, moved by `offset`. */
const clock = { offset: 0, now: () => Date.now() + clock.offset };

describe.skipIf(!CHROMIUM)("a cron trigger's page while its schedule fires", { timeout: 90_000 }, () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  let a: AgentStateDir;
  let daemon: DaemonProcess | undefined;

  beforeAll(async () => {
    t = await startTestCoordinator({ clock });
    a = await enrollAgentStateDir(t);
    writeWorkflowFile(a.stateDir, 'tick', 'name: tick\nsteps:\n  - run: echo tick\n    shell: true\n');
    daemon = startDaemonProcess(a.stateDir);
    await eventually(
      async () => (await t.owner.get(`/orgs/${t.orgId}/workflows`)).body.length === 1,
      30_000,
      'the agent to connect and report its workflow',
    );
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
  }, 60_000);
  afterAll(async () => {
    await stopDaemonProcess(daemon);
    await browser?.close();
    await t?.close();
    if (a) fs.rmSync(path.dirname(a.stateDir), { recursive: true, force: true });
  });
  screenshotOnFailure(() => [owner?.page]);

  it('shows the occurrence with its job number, the next run moving on, and the recent job', async () => {
    // The coordinator's next minute starts 8 s from now: time to open the page first.
    const now = Date.now();
    clock.offset = (((MINUTE - 8_000 - (now % MINUTE)) % MINUTE) + MINUTE) % MINUTE;
    const due = Math.ceil(clock.now() / MINUTE) * MINUTE;
    const created = await t.owner.post<{ id: string }>(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'every minute',
        type: 'cron',
        agentId: a.agentId,
        scopeType: 'workflow',
        workflowName: 'tick',
        responseMode: 'async',
        cronExpression: '* * * * *',
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const page = owner.page;
    await page.goto(`/orgs/${t.orgId}/triggers/${created.body.id}`);
    await page.waitForURL('**/login?next=*');
    await page.getByLabel('Email').fill(OWNER_EMAIL);
    await page.getByLabel('Password').fill(OWNER_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
    const next = page.getByRole('list', { name: 'Next runs' }).getByRole('listitem').first();
    expect(await next.innerText()).toContain(`${hhmm(due)} UTC`);
    await page.getByText('No occurrence yet.').waitFor();

    // The schedule fires; the page, left alone, follows.
    const occurrence = page
      .getByRole('table')
      .filter({ hasText: 'Scheduled' })
      .getByRole('link', { name: /^job #/ });
    await occurrence.waitFor({ timeout: 30_000 });
    const [fired] = (await t.owner.get<{ jobId: string }[]>(`/orgs/${t.orgId}/triggers/${created.body.id}/occurrences`))
      .body;
    const job = (await t.owner.get<{ number: number }>(`/jobs/${fired!.jobId}`)).body;
    expect(await occurrence.getAttribute('href')).toBe(`/api/jobs/${fired!.jobId}`);
    let shown = '';
    await eventually(
      async () => (shown = await occurrence.innerText()) === `job #${job.number} success`,
      30_000,
      () => `the occurrence to show "job #${job.number} success" (it shows "${shown}")`,
    );
    await eventually(
      async () => (await next.innerText()).includes(`${hhmm(due + MINUTE)} UTC`),
      15_000,
      'the next run to move on',
    );
    await page
      .getByRole('table', { name: 'Recent jobs' })
      .getByRole('row', { name: new RegExp(`^#${job.number} tick`) })
      .waitFor();
    expect(owner.problems).toEqual([]);
  });
});
