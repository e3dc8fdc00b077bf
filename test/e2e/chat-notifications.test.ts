import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow } from '../helpers/agent.js';
import { startDaemonRig, type DaemonRig } from '../helpers/agent-daemon.js';
import { connectWorkspace } from '../helpers/chat.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import {
  DISCORD_APP_ID,
  DISCORD_BOT_TOKEN,
  DISCORD_CODE,
  DISCORD_GUILD,
  DISCORD_MISSING_CHANNEL,
  discordEnv,
  FakeDiscord,
} from '../helpers/fake-discord.js';
import {
  FakeSlack,
  SLACK_BOT_TOKEN,
  SLACK_CODE,
  SLACK_MISSING_CHANNEL,
  SLACK_TEAM,
  slackEnv,
} from '../helpers/fake-slack.js';
import type { ApiClient } from '../helpers/http.js';
import { eventually } from '../helpers/poll.js';
import { runnableTrigger, startRunFixture, WORKFLOWS, type RunFixture } from '../helpers/trigger-runs.js';

/**
 * Chat notifications end to end (docs/chat.md, "Notifications"): a real coordinator with a fake
 * clock, the fake Slack and Discord APIs, workspaces connected through the OAuth flow, jobs ended
 * through the agent protocol (and by cancel, the deadline sweep, revocation and a refused call).
 * The tests drive the delivery worker (`deliverDue`) and move the clock for retries.
 */

type Outcome = 'success' | 'failed' | 'timed_out' | 'cancelled' | 'rejected';
const OUTCOMES: Outcome[] = ['success', 'failed', 'timed_out', 'cancelled', 'rejected'];
const DISCORD_CHANNEL = '1180000000000000555';
const GIVE_UP_SECONDS = 600;

interface Notification {
  provider: string;
  teamId: string;
  channelId: string;
  status: string;
  attempts: number;
  lastError: string | null;
  createdAt: string;
  nextAttemptAt: string | null;
  sentAt: string | null;
  failedAt: string | null;
}

async function connectBoth(t: TestCoordinator, client: ApiClient): Promise<void> {
  const slack = await connectWorkspace(t, client, 'slack', (state) => ({ code: SLACK_CODE, state }));
  const discord = await connectWorkspace(t, client, 'discord', (state) => ({
    code: DISCORD_CODE,
    state,
    guild_id: DISCORD_GUILD.id,
  }));
  for (const { completion } of [slack, discord]) {
    if (completion.body.outcome !== 'connected') throw new Error(`not connected: ${completion.text}`);
  }
}

describe('chat notifications', () => {
  const slack = new FakeSlack();
  const discord = new FakeDiscord();
  let f: RunFixture;
  const deliverDue = () => f.t.coordinator.chatDelivery.deliverDue();

  beforeAll(async () => {
    await Promise.all([slack.start(), discord.start()]);
    f = await startRunFixture([...WORKFLOWS, workflow('slow', { timeout: 1000 })], {
      ...slackEnv(slack),
      ...discordEnv(discord),
      DROVER_CHAT_GIVE_UP_SECONDS: String(GIVE_UP_SECONDS),
      DROVER_JOB_DEADLINE_GRACE_MS: '200',
    });
    await connectBoth(f.t, await f.owner());
  });
  afterAll(async () => {
    await f?.close();
    await Promise.all([slack.close(), discord.close()]);
  });

  const slackTrigger = (channel: string, notifyOn: string, extra: Record<string, unknown> = {}) =>
    f.createTrigger({
      name: `notify ${notifyOn}`,
      notifyProvider: 'slack',
      notifyTeamId: SLACK_TEAM.id,
      notifyChannelId: channel,
      notifyOn,
      ...extra,
    });

  /** Runs the trigger once; answers the job's id. */
  async function runJob(triggerId: string, token: string, body: object = {}): Promise<string> {
    const res = await f.run(token, triggerId, body);
    if (res.status !== 202) throw new Error(`run: ${res.status} ${res.text}`);
    return res.body.jobId as string;
  }

  /** Ends a pending job with `outcome` the way it happens: the agent's report, a user's cancel, the agent's refusal. */
  async function endAs(jobId: string, outcome: Outcome, output: object = {}): Promise<void> {
    if (outcome === 'cancelled') {
      const res = await (await f.owner()).post(`/jobs/${jobId}/cancel`);
      if (res.status !== 200) throw new Error(`cancel: ${res.status} ${res.text}`);
    } else if (outcome === 'rejected') {
      await f.reject(jobId, 'job queue full; rejecting');
    } else {
      await f.finish(jobId, {
        status: outcome,
        exitCode: outcome === 'success' ? 0 : outcome === 'failed' ? 3 : null,
        errorMessage: outcome === 'success' ? null : `it ${outcome}\nsecond line`,
        output,
      });
    }
  }

  const notificationsOf = async (jobId: string): Promise<Notification[]> =>
    ((await f.job(jobId)) as unknown as { notifications: Notification[] }).notifications;
  const slackPostsTo = (channel: string) => slack.posted.filter((m) => m.channel === channel);
  const discordPostsOf = (jobId: string) => discord.posted.filter((m) => String(m.content).includes(jobId));

  it('posts each outcome that notifyOn covers: always all five, success, failure (failed, timed out, rejected), none nothing', async () => {
    const channels = { always: 'C0ALWAYS', success: 'C0SUCCESS', failure: 'C0FAILURE', none: 'C0NONE' } as const;
    const jobs: Record<string, Record<Outcome, string>> = {};
    for (const [notifyOn, channel] of Object.entries(channels)) {
      const trigger = await slackTrigger(channel, notifyOn);
      const token = await f.token([trigger.id]);
      jobs[notifyOn] = {} as Record<Outcome, string>;
      for (const outcome of OUTCOMES) {
        const jobId = await runJob(trigger.id, token);
        await endAs(jobId, outcome);
        jobs[notifyOn][outcome] = jobId;
      }
    }
    await deliverDue();

    // Each channel's messages, in any order: the worker sends a round's messages at once.
    const headers = (channel: string) =>
      slackPostsTo(channel)
        .map((m) => (m.blocks[0] as { text: { text: string } }).text.text.replace(/^#\d+ /, ''))
        .sort();
    expect(headers('C0ALWAYS')).toEqual(
      [
        'notify always: SUCCESS',
        'notify always: FAILED',
        'notify always: TIMED OUT',
        'notify always: CANCELLED',
        'notify always: REJECTED',
      ].sort(),
    );
    expect(headers('C0SUCCESS')).toEqual(['notify success: SUCCESS']);
    expect(headers('C0FAILURE')).toEqual(
      ['notify failure: FAILED', 'notify failure: TIMED OUT', 'notify failure: REJECTED'].sort(),
    );
    expect(headers('C0NONE')).toEqual([]);

    // The job detail shows each one's delivery; a job whose trigger posts nothing has none.
    const delivered = await notificationsOf(jobs.failure!.timed_out);
    expect(delivered).toEqual([
      {
        kind: 'notification',
        provider: 'slack',
        teamId: SLACK_TEAM.id,
        channelId: 'C0FAILURE',
        status: 'sent',
        attempts: 1,
        lastError: null,
        createdAt: expect.any(String),
        nextAttemptAt: null,
        sentAt: expect.any(String),
        failedAt: null,
      },
    ]);
    expect(await notificationsOf(jobs.failure!.success)).toEqual([]);
    expect(await notificationsOf(jobs.failure!.cancelled)).toEqual([]);
    expect(await notificationsOf(jobs.none!.failed)).toEqual([]);
    // Nothing is sent twice.
    const requests = slack.received('POST', '/api/chat.postMessage').length;
    await deliverDue();
    expect(slack.received('POST', '/api/chat.postMessage')).toHaveLength(requests);
  });

  it("answers a chat run's writer but posts no notification once its trigger was deleted", async () => {
    const trigger = await slackTrigger('C0GONE', 'always');
    const jobId = await runJob(trigger.id, await f.token([trigger.id]));
    // As a run from /drover in C0ASKED is stored.
    const origin = { provider: 'slack', teamId: SLACK_TEAM.id, channelId: 'C0ASKED', userId: 'U0ADA', userName: 'ada' };
    await f.t.sql.run('UPDATE jobs SET chat_origin = ? WHERE id = ?', JSON.stringify(origin), jobId);
    expect((await (await f.owner()).delete(`/orgs/${f.t.orgId}/triggers/${trigger.id}`)).status).toBe(200);
    await endAs(jobId, 'success');
    await deliverDue();
    expect(slackPostsTo('C0ASKED')).toHaveLength(1);
    expect(slackPostsTo('C0GONE')).toEqual([]);
  });

  it('posts to Slack with the bot token: blocks with number, trigger, outcome, ref, duration, exit code, error line, outputs and link', async () => {
    const trigger = await slackTrigger('C0BUILDS', 'always', { name: 'nightly build' });
    const jobId = await runJob(trigger.id, await f.token([trigger.id]), { ref: 'release/1.4' });
    await endAs(jobId, 'failed', { version: '1.4.2' });
    await deliverDue();

    const job = await f.job(jobId);
    const [request] = slack.received('POST', '/api/chat.postMessage').filter((r) => r.body.channel === 'C0BUILDS');
    expect(request?.headers.authorization).toBe(`Bearer ${SLACK_BOT_TOKEN}`);
    const [message] = slackPostsTo('C0BUILDS');
    const number = (job as unknown as { number: number }).number;
    const link = `${f.t.url}/api/jobs/${jobId}`;
    expect(message?.text).toBe(
      `Drover job #${number} nightly build: FAILED (ref release/1.4, 0 ms, exit code 3): it failed ${link}`,
    );
    expect(message?.blocks).toEqual([
      { type: 'header', text: { type: 'plain_text', text: `#${number} nightly build: FAILED`, emoji: false } },
      {
        type: 'section',
        fields: [
          { type: 'mrkdwn', text: '*Outcome*\n:x: FAILED' },
          { type: 'mrkdwn', text: '*Workflow*\nbuild' },
          { type: 'mrkdwn', text: '*Ref*\n`release/1.4`' },
          { type: 'mrkdwn', text: '*Duration*\n0 ms' },
          { type: 'mrkdwn', text: '*Exit code*\n3' },
        ],
      },
      { type: 'section', text: { type: 'mrkdwn', text: '*Error*\n```it failed```' } },
      { type: 'section', text: { type: 'mrkdwn', text: '*Output*\n• *version*: `1.4.2`' } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: `<${link}|Open job #${number} in Drover>` }] },
    ]);
  });

  it('posts to Discord with the bot token: an embed coloured by outcome, and a content fallback', async () => {
    const trigger = await f.createTrigger({
      name: 'deploy web',
      notifyProvider: 'discord',
      notifyTeamId: DISCORD_GUILD.id,
      notifyChannelId: DISCORD_CHANNEL,
      notifyOn: 'success',
    });
    const jobId = await runJob(trigger.id, await f.token([trigger.id]));
    await endAs(jobId, 'success', { url: 'https://example.test/web', replicas: 3 });
    await deliverDue();

    const { number } = (await f.job(jobId)) as unknown as { number: number };
    const link = `${f.t.url}/api/jobs/${jobId}`;
    const [request] = discord.received('POST', `/api/v10/channels/${DISCORD_CHANNEL}/messages`);
    expect(request?.headers.authorization).toBe(`Bot ${DISCORD_BOT_TOKEN}`);
    expect(request?.body).toEqual({
      content: `Drover job #${number} deploy web: SUCCESS ${link}`,
      allowed_mentions: { parse: [] },
      embeds: [
        {
          title: `#${number} deploy web: SUCCESS`,
          url: link,
          color: 0x2eb67d,
          footer: { text: 'Drover' },
          timestamp: expect.any(String),
          fields: [
            { name: 'Workflow', value: 'build', inline: true },
            { name: 'Ref', value: '—', inline: true },
            { name: 'Duration', value: '0 ms', inline: true },
            { name: 'Exit code', value: '0', inline: true },
            { name: 'url', value: '`https://example.test/web`' },
            { name: 'replicas', value: '`3`' },
          ],
        },
      ],
    });
  });

  it("waits as long as a 429's Retry-After says, on both providers, then delivers", async () => {
    slack.failNext('POST', '/api/chat.postMessage', {
      status: 429,
      headers: { 'retry-after': '30' },
      body: { ok: false, error: 'ratelimited' },
    });
    discord.failNext('POST', '/api/v10/channels/:channel/messages', {
      status: 429,
      headers: { 'retry-after': '7' },
      body: { message: 'You are being rate limited.', retry_after: 7, global: false },
    });
    const toSlack = await slackTrigger('C0LIMITED', 'always');
    const toDiscord = await f.createTrigger({
      notifyProvider: 'discord',
      notifyTeamId: DISCORD_GUILD.id,
      notifyChannelId: DISCORD_CHANNEL,
      notifyOn: 'always',
    });
    const slackJob = await runJob(toSlack.id, await f.token([toSlack.id]));
    const discordJob = await runJob(toDiscord.id, await f.token([toDiscord.id]));
    await endAs(slackJob, 'success');
    await endAs(discordJob, 'success');
    const at = f.clock.now();
    await deliverDue();

    const [slackWaiting] = await notificationsOf(slackJob);
    expect(slackWaiting).toMatchObject({
      status: 'pending',
      attempts: 1,
      lastError: 'Slack is rate limiting us (retry after 30 s)',
      nextAttemptAt: new Date(at + 30_000).toISOString(),
    });
    const [discordWaiting] = await notificationsOf(discordJob);
    expect(discordWaiting).toMatchObject({
      status: 'pending',
      attempts: 1,
      lastError: expect.stringMatching(/rate limit/),
    });
    expect(Date.parse(discordWaiting!.nextAttemptAt!)).toBeGreaterThanOrEqual(at + 7000);

    f.clock.advance(7_100);
    await deliverDue();
    expect(discordPostsOf(discordJob)).toHaveLength(1);
    f.clock.advance(29_999 - 7_100);
    await deliverDue();
    expect(slackPostsTo('C0LIMITED')).toHaveLength(0);
    expect(slack.received('POST', '/api/chat.postMessage').filter((r) => r.body.channel === 'C0LIMITED')).toHaveLength(
      1,
    );
    f.clock.advance(1);
    await deliverDue();
    expect(slackPostsTo('C0LIMITED')).toHaveLength(1);
    expect(await notificationsOf(slackJob)).toMatchObject([{ status: 'sent', attempts: 2, lastError: null }]);
  });

  it("retries what Slack answers with its documented passing errors (rate_limited, a workspace's migration), then delivers", async () => {
    // https://api.slack.com/methods/chat.postMessage#errors: `rate_limited` ("Application has
    // posted too many messages") comes as HTTP 200 `{ok: false}`, not as a 429; a workspace joining
    // an Enterprise organization is unavailable "until the transition is complete".
    const passing = ['rate_limited', 'team_added_to_org', 'org_login_required'];
    const jobs: string[] = [];
    for (const [i, error] of passing.entries()) {
      const trigger = await slackTrigger(`C0PASSING${i}`, 'always');
      const jobId = await runJob(trigger.id, await f.token([trigger.id]));
      await endAs(jobId, 'success');
      slack.failNext('POST', '/api/chat.postMessage', { body: { ok: false, error } });
      await deliverDue();
      expect(await notificationsOf(jobId)).toMatchObject([
        { status: 'pending', attempts: 1, lastError: `Slack answered: ${error}`, failedAt: null },
      ]);
      jobs.push(jobId);
    }
    f.clock.advance(5_000); // the first retry comes within 5 s
    await deliverDue();
    for (const [i, jobId] of jobs.entries()) {
      expect(await notificationsOf(jobId)).toMatchObject([{ status: 'sent', attempts: 2, lastError: null }]);
      expect(slackPostsTo(`C0PASSING${i}`)).toHaveLength(1);
    }
  });

  it('refuses a mention a limit refused once however often it arrives (a resumed Gateway session, every coordinator): one rejected job, one REJECTED post', async () => {
    await f.putWorkflows(f.agent, [...WORKFLOWS, workflow('slow', { timeout: 1000 }), workflow('greet')]);
    await f.setWorkflowLimits(await f.workflowId('greet'), { rateLimitPerMinute: 1 });
    const channel = '1180000000000000600';
    const notifyChannel = '1180000000000000601';
    const trigger = await f.createTrigger({
      name: 'greeter',
      type: 'discord',
      workflowName: 'greet',
      chatTeamId: DISCORD_GUILD.id,
      chatChannelId: channel,
      chatKeyword: 'greet',
      notifyProvider: 'discord',
      notifyTeamId: DISCORD_GUILD.id,
      notifyChannelId: notifyChannel,
      notifyOn: 'failure',
    });
    await eventually(async () => discord.gatewayReady() || undefined, 20_000, 'the Gateway session');
    const message = (id: string) => ({
      id,
      channel_id: channel,
      guild_id: DISCORD_GUILD.id,
      author: { id: '1180000000000000654', username: 'linus', discriminator: '0', avatar: null },
      member: { nick: null, roles: [] },
      content: `<@${DISCORD_APP_ID}> greet`,
      mentions: [{ id: DISCORD_APP_ID, username: 'drover', bot: true }],
      type: 0,
      timestamp: new Date(f.clock.now()).toISOString(),
      tts: false,
      mention_everyone: false,
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
    });
    const answersTo = (messageId: string) =>
      discord.posted.filter((m) => m.channel_id === channel && m.message_reference?.message_id === messageId);
    const first = message('1180000000000043001');
    const second = message('1180000000000043002');
    discord.dispatchMessage(first);
    await eventually(async () => answersTo(first.id)[0], 10_000, 'the answer to the first mention');
    discord.dispatchMessage(second);
    const [refusal] = await eventually(
      async () => (answersTo(second.id).length > 0 ? answersTo(second.id) : undefined),
      10_000,
      'the answer to the second mention',
    );
    expect(refusal!.content).toMatch(/^Nothing was started: Rate limit of workflow `greet` exceeded for the minute/);

    // The second message again, as the Gateway's handler takes it: a resumed session replaying it,
    // or the session of another coordinator on the database. Still refused, in the next minute too.
    const again = {
      provider: 'discord' as const,
      teamId: DISCORD_GUILD.id,
      channelId: channel,
      userId: second.author.id,
      userName: second.author.username,
      text: 'greet',
      messageId: second.id,
      deliveryId: second.id,
    };
    const { chatRuns } = f.t.coordinator.ctx;
    expect(await chatRuns.run(again)).toMatchObject({
      kind: 'not_started',
      text: expect.stringMatching(/^Nothing was started: Rate limit of workflow `greet` exceeded for the minute/),
    });
    f.clock.advance(60_000);
    expect(await chatRuns.run(again)).toMatchObject({ kind: 'not_started' });

    const jobs = await f.jobsOf(trigger.id);
    expect(jobs.map((j) => j.status)).toEqual(['pending', 'rejected']);
    await deliverDue();
    const rejectedPosts = discord.posted.filter(
      (m) => m.channel_id === notifyChannel && String(m.content).includes(': REJECTED'),
    );
    expect(rejectedPosts).toHaveLength(1);
    expect(answersTo(second.id)).toHaveLength(1);
  });

  it('keeps retrying while the provider is down (503, then refusing connections) and delivers once it is back, once', async () => {
    const trigger = await f.createTrigger({
      notifyProvider: 'discord',
      notifyTeamId: DISCORD_GUILD.id,
      notifyChannelId: DISCORD_CHANNEL,
      notifyOn: 'always',
    });
    const jobId = await runJob(trigger.id, await f.token([trigger.id]));
    discord.failNext('POST', '/api/v10/channels/:channel/messages', { status: 503, body: { message: 'down' } }, 2);
    await endAs(jobId, 'failed');

    await deliverDue();
    expect(await notificationsOf(jobId)).toMatchObject([
      { status: 'pending', attempts: 1, lastError: 'Discord answered HTTP 503' },
    ]);
    f.clock.advance(5_000); // the first retry comes within 5 s
    await deliverDue();
    expect(await notificationsOf(jobId)).toMatchObject([{ status: 'pending', attempts: 2 }]);

    const port = discord.port;
    await discord.close();
    f.clock.advance(10_000); // the second within 10 s
    await deliverDue();
    expect(await notificationsOf(jobId)).toMatchObject([
      { status: 'pending', attempts: 3, lastError: expect.stringMatching(/^Discord could not be reached/) },
    ]);

    await discord.start(port);
    f.clock.advance(20_000);
    await deliverDue();
    f.clock.advance(3600_000);
    await deliverDue();
    expect(discordPostsOf(jobId)).toHaveLength(1);
    expect(await notificationsOf(jobId)).toMatchObject([{ status: 'sent', attempts: 4, lastError: null }]);
  });

  it('retries a message Discord answered 401 with the bot token again, and delivers it and those after it', async () => {
    const trigger = await f.createTrigger({
      notifyProvider: 'discord',
      notifyTeamId: DISCORD_GUILD.id,
      notifyChannelId: DISCORD_CHANNEL,
      notifyOn: 'always',
    });
    const token = await f.token([trigger.id]);
    const first = await runJob(trigger.id, token);
    await endAs(first, 'success');
    discord.failNext('POST', '/api/v10/channels/:channel/messages', {
      status: 401,
      body: { message: '401: Unauthorized', code: 0 },
    });
    await deliverDue();
    expect(await notificationsOf(first)).toMatchObject([
      { status: 'pending', attempts: 1, lastError: 'Discord answered 401: 401: Unauthorized' },
    ]);

    // Discord takes the token again: the retry and the next message reach it, with the token.
    const second = await runJob(trigger.id, token);
    await endAs(second, 'success');
    f.clock.advance(5_000);
    await deliverDue();
    for (const jobId of [first, second]) {
      expect(await notificationsOf(jobId)).toMatchObject([{ status: 'sent', lastError: null }]);
      expect(discordPostsOf(jobId)).toHaveLength(1);
    }
  });

  it('fails at once, without retrying, for a workspace that is not connected and for a channel the provider does not know', async () => {
    const elsewhere = await f.createTrigger({
      notifyProvider: 'slack',
      notifyTeamId: 'T0ELSEWHERE',
      notifyChannelId: 'C0ANY',
      notifyOn: 'failure',
    });
    const missingSlack = await slackTrigger(SLACK_MISSING_CHANNEL, 'failure');
    const missingDiscord = await f.createTrigger({
      notifyProvider: 'discord',
      notifyTeamId: DISCORD_GUILD.id,
      notifyChannelId: DISCORD_MISSING_CHANNEL,
      notifyOn: 'failure',
    });
    const jobs: string[] = [];
    for (const trigger of [elsewhere, missingSlack, missingDiscord]) {
      const jobId = await runJob(trigger.id, await f.token([trigger.id]));
      await endAs(jobId, 'failed');
      jobs.push(jobId);
    }
    await deliverDue();
    f.clock.advance(3600_000);
    await deliverDue();

    const errors = [];
    for (const jobId of jobs) {
      const [n] = await notificationsOf(jobId);
      expect(n).toMatchObject({ status: 'failed', attempts: 1, nextAttemptAt: null, failedAt: expect.any(String) });
      errors.push(n?.lastError);
    }
    expect(errors).toEqual([
      'Slack workspace T0ELSEWHERE is not connected to this organization',
      'Slack answered: channel_not_found',
      'Discord answered 404: Unknown Channel',
    ]);
  });

  it('posts the jobs that end by a refused call, the deadline sweep and the revocation of their agent', async () => {
    const owner = await f.owner();
    // A refused call: the workflow allows one run a minute.
    const limited = await slackTrigger('C0PATHS', 'failure', { workflowName: 'lint' });
    await f.setWorkflowLimits(await f.workflowId('lint'), { rateLimitPerMinute: 1 });
    const limitedToken = await f.token([limited.id]);
    await runJob(limited.id, limitedToken);
    const refused = await f.run(limitedToken, limited.id, {});
    expect(refused.status).toBe(429);
    const rejectedJob = (await f.jobsOf(limited.id)).find((j) => j.status === 'rejected')!.id;

    // The deadline sweep: a running job past its timeout (1 s) and the grace (200 ms).
    const slow = await slackTrigger('C0PATHS', 'failure', { workflowName: 'slow' });
    const overdueJob = await runJob(slow.id, await f.token([slow.id]));
    const started = await f.agent.request('POST', `/v1/agent/jobs/${overdueJob}/start`, undefined, {
      now: f.clock.now(),
    });
    expect(started.status).toBe(200);
    f.clock.advance(1_300);
    await eventually(async () => (await f.job(overdueJob)).status === 'failed', 15_000, 'the deadline sweep');

    // Revocation: the open jobs of a revoked agent fail.
    const other = await enrollTestAgent(owner, f.t.orgId, { name: 'second' });
    await f.putWorkflows(other, WORKFLOWS);
    const orphaned = await f.createTrigger(
      { notifyProvider: 'slack', notifyTeamId: SLACK_TEAM.id, notifyChannelId: 'C0PATHS', notifyOn: 'failure' },
      other,
    );
    const orphanedJob = await runJob(orphaned.id, await f.token([orphaned.id]));
    expect((await owner.delete(`/orgs/${f.t.orgId}/agents/${other.agentId}`)).status).toBe(200);
    await eventually(
      async () => (await f.job(orphanedJob)).status === 'failed',
      15_000,
      'the revocation to fail the job',
    );

    await deliverDue();
    const posted = slackPostsTo('C0PATHS').map((m) => m.text as string);
    expect(posted).toHaveLength(3);
    for (const [jobId, label] of [
      [rejectedJob, 'REJECTED'],
      [overdueJob, 'FAILED'],
      [orphanedJob, 'FAILED'],
    ] as const) {
      expect(posted.find((text) => text.includes(jobId))).toContain(`: ${label}`);
      expect(await notificationsOf(jobId)).toMatchObject([{ status: 'sent' }]);
    }
  });

  it('gives up after DROVER_CHAT_GIVE_UP_SECONDS and shows why on the job', async () => {
    const trigger = await slackTrigger('C0DOWN', 'always');
    const jobId = await runJob(trigger.id, await f.token([trigger.id]));
    slack.failNext('POST', '/api/chat.postMessage', { status: 503, body: { ok: false } }, 1000);
    try {
      await endAs(jobId, 'success');
      let rounds = 0;
      for (; rounds < 20; rounds++) {
        await deliverDue();
        if ((await notificationsOf(jobId))[0]?.status === 'failed') break;
        f.clock.advance(120_000);
      }
      expect(rounds).toBe(GIVE_UP_SECONDS / 120);
    } finally {
      slack.clearFailures();
    }
    const [n] = await notificationsOf(jobId);
    expect(n).toMatchObject({
      status: 'failed',
      attempts: GIVE_UP_SECONDS / 120 + 1,
      lastError: `gave up after ${GIVE_UP_SECONDS / 120 + 1} attempts over 10 min: Slack answered HTTP 503 Service Unavailable`,
      nextAttemptAt: null,
      failedAt: expect.any(String),
    });
    const requests = slack.received('POST', '/api/chat.postMessage').length;
    f.clock.advance(3600_000);
    await deliverDue();
    expect(slack.received('POST', '/api/chat.postMessage')).toHaveLength(requests);
    expect(slackPostsTo('C0DOWN')).toHaveLength(0);
  });
});

describe('chat notifications across a restart', () => {
  const slack = new FakeSlack();
  const dataDir = makeTempDir('drover-chat-restart-');
  let t: TestCoordinator | undefined;
  afterAll(async () => {
    await t?.close();
    await slack.close();
  });

  it('delivers a message that was still pending when the coordinator stopped', async () => {
    await slack.start();
    t = await startTestCoordinator({ dataDir, env: slackEnv(slack) });
    const first = t;
    await connectWorkspace(first, first.owner, 'slack', (state) => ({ code: SLACK_CODE, state }));
    const agent = await enrollTestAgent(first.owner, first.orgId);
    expect((await agent.putWorkflows([workflow('build')])).status).toBe(200);
    const trigger = await runnableTrigger(first, agent.agentId, 'build', {
      notifyProvider: 'slack',
      notifyTeamId: SLACK_TEAM.id,
      notifyChannelId: 'C0RESTART',
      notifyOn: 'always',
    });
    const run = await first.api.post(`/triggers/${trigger.id}/run`, { token: trigger.token, body: {} });
    const jobId = run.body.jobId as string;
    // The first attempt fails: the message waits for its retry when the coordinator stops.
    slack.failNext('POST', '/api/chat.postMessage', { status: 503, body: { ok: false } });
    expect((await agent.request('POST', `/v1/agent/jobs/${jobId}/start`)).status).toBe(200);
    const body = { status: 'success', exitCode: 0, errorMessage: null, output: {} };
    expect((await agent.request('POST', `/v1/agent/jobs/${jobId}/finish`, body)).status).toBe(200);
    await first.coordinator.chatDelivery.deliverDue();
    const pending = await first.owner.get(`/jobs/${jobId}`);
    expect(pending.body.notifications).toMatchObject([{ status: 'pending', attempts: 1 }]);
    await first.close();

    t = await startTestCoordinator({ dataDir, env: slackEnv(slack) });
    const second = t;
    await eventually(() => slack.posted.length === 1, 15_000, 'the pending message to be delivered after the restart');
    expect(slack.posted[0]?.channel).toBe('C0RESTART');
    // Marked sent once Slack answered: just after the post arrived there.
    const notifications = await eventually(
      async () => {
        const job = await second.owner.get(`/jobs/${jobId}`);
        return job.body.notifications[0]?.status === 'sent' ? job.body.notifications : undefined;
      },
      15_000,
      'the message marked sent',
    );
    expect(notifications).toMatchObject([{ status: 'sent', attempts: 2 }]);
    expect(slack.received('POST', '/api/chat.postMessage')).toHaveLength(2);
  });
});

describe('chat notifications of a job run by a real agent', () => {
  const discord = new FakeDiscord();
  let rig: DaemonRig | undefined;
  afterAll(async () => {
    await rig?.close();
    await discord.close();
  });

  it('posts the outcome with the output values the workflow wrote', async () => {
    await discord.start();
    rig = await startDaemonRig({
      workPrefix: 'drover-chat-notify-',
      env: discordEnv(discord),
      workflows: () => ({
        release: [
          'name: release',
          'steps:',
          '  - run: echo "version=2.0.1" >> "$DROVER_OUTPUT"; echo "channel=stable" >> "$DROVER_OUTPUT"',
          '    shell: true',
        ],
      }),
    });
    const { t, a } = rig;
    await connectWorkspace(t, t.owner, 'discord', (state) => ({
      code: DISCORD_CODE,
      state,
      guild_id: DISCORD_GUILD.id,
    }));
    const trigger = await runnableTrigger(t, a.agentId, 'release', {
      name: 'release web',
      notifyProvider: 'discord',
      notifyTeamId: DISCORD_GUILD.id,
      notifyChannelId: DISCORD_CHANNEL,
      notifyOn: 'success',
    });
    const run = await t.api.post(`/triggers/${trigger.id}/run`, { token: trigger.token, body: {} });
    expect(run.status).toBe(202);
    const jobId = run.body.jobId as string;
    rig.jobIds.push(jobId);

    // The worker's own timer delivers it: nothing here drives it.
    const [message] = await eventually(
      () => (discord.posted.length > 0 ? discord.posted : null),
      20_000,
      'the message',
    );
    const job = (await t.owner.get(`/jobs/${jobId}`)).body;
    expect(job.status).toBe('success');
    expect(message).toMatchObject({
      channel_id: DISCORD_CHANNEL,
      content: `Drover job #${job.number} release web: SUCCESS ${t.url}/api/jobs/${jobId}`,
      embeds: [
        {
          title: `#${job.number} release web: SUCCESS`,
          fields: expect.arrayContaining([
            { name: 'Workflow', value: 'release', inline: true },
            { name: 'Exit code', value: '0', inline: true },
            { name: 'version', value: '`2.0.1`' },
            { name: 'channel', value: '`stable`' },
          ]),
        },
      ],
    });
    expect(job.notifications).toMatchObject([{ provider: 'discord', status: 'sent', attempts: 1 }]);
  });
});
