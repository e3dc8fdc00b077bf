import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemonRig, type DaemonRig } from '../helpers/agent-daemon.js';
import {
  CHROMIUM,
  expectAccessible,
  launchBrowser,
  openPage,
  screenshotOnFailure,
  type TestPage,
} from '../helpers/browser.js';
import { connectWorkspace } from '../helpers/chat.js';
import { OWNER_EMAIL, OWNER_PASSWORD } from '../helpers/coordinator.js';
import { FakeSlack, SLACK_CODE, SLACK_TEAM, slackEnv, slackSignedHeaders } from '../helpers/fake-slack.js';
import { eventually } from '../helpers/poll.js';

/**
 * A chat run's page in a real Chromium: who started it from which channel, and the chat
 * message its end posted: the outcome told to its writer, which stands for the trigger's
 * notification to the same channel (a real coordinator, the fake Slack, a real agent).
 */
const CHANNEL = 'C0DEPLOYS';

describe.skipIf(!CHROMIUM)('a chat run on the job page', () => {
  const slack = new FakeSlack();
  let rig: DaemonRig;
  let browser: Browser;
  let owner: TestPage;
  let jobUrl: string;
  screenshotOnFailure(() => [owner?.page]);

  beforeAll(async () => {
    await slack.start();
    rig = await startDaemonRig({
      workPrefix: 'drover-browser-chat-',
      env: slackEnv(slack),
      workflows: () => ({ hello: ['name: hello', 'steps:', '  - run: echo "hello from chat"', '    shell: true'] }),
    });
    const { t } = rig;
    await connectWorkspace(t, t.owner, 'slack', (state) => ({ code: SLACK_CODE, state }));
    const created = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'Hello',
        type: 'slack',
        agentId: rig.a.agentId,
        scopeType: 'workflow',
        workflowName: 'hello',
        responseMode: 'async',
        chatTeamId: SLACK_TEAM.id,
        chatChannelId: CHANNEL,
        chatKeyword: 'hello',
        notifyProvider: 'slack',
        notifyTeamId: SLACK_TEAM.id,
        notifyChannelId: CHANNEL,
        notifyOn: 'always',
      },
    });
    expect(created.status, created.text).toBe(201);
    const body = new URLSearchParams({
      team_id: SLACK_TEAM.id,
      channel_id: CHANNEL,
      user_id: 'U0ADA',
      user_name: 'ada',
      command: '/drover',
      text: 'hello',
    }).toString();
    const res = await fetch(`${t.url}/v1/chat/slack/commands`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...slackSignedHeaders(body) },
      body,
    });
    const answer = (await res.json()) as { text: string };
    jobUrl = /(http\S+)$/.exec(answer.text)![1]!;
    const jobId = jobUrl.split('/').at(-1)!;
    rig.jobIds.push(jobId);
    await eventually(
      async () => {
        const job = await t.owner.get(`/jobs/${jobId}`);
        return job.body.status === 'success' && job.body.notifications[0]?.status === 'sent';
      },
      30_000,
      'the chat run to succeed and its outcome to be posted',
    );
    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await rig?.close();
    await slack.close();
  });

  it('says who started the run from which channel, and that its outcome was told to them', async () => {
    const { page } = owner;
    await page.goto(jobUrl);
    await page.waitForURL('**/login?next=*');
    await page.getByLabel('Email').fill(OWNER_EMAIL);
    await page.getByLabel('Password').fill(OWNER_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Chat messages' }).waitFor({ timeout: 20_000 });
    expect(await page.locator('dl.facts').innerText()).toContain(`Slack, by ada in channel ${CHANNEL}`);
    // One message: the trigger notifies the channel the command was written in.
    expect(await page.getByRole('list', { name: 'Chat messages' }).innerText()).toMatch(
      new RegExp(`^Slack outcome told to the writer in channel ${CHANNEL}: sent at [^\\n]+$`),
    );
    expect(slack.posted).toHaveLength(1);
    expect(slack.posted[0]).toMatchObject({
      channel: CHANNEL,
      text: expect.stringMatching(/^<@U0ADA> Drover job #1 Hello: SUCCESS/),
    });
    await expectAccessible(page, 'a chat run');
    expect(owner.problems).toEqual([]);
  });
});
