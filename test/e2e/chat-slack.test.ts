import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemonRig, stopDaemonProcess, type DaemonRig } from '../helpers/agent-daemon.js';
import { auditEntries } from '../helpers/audit.js';
import { connectWorkspace } from '../helpers/chat.js';
import {
  FakeSlack,
  SLACK_BOT_TOKEN,
  SLACK_CODE,
  SLACK_TEAM,
  slackEnv,
  slackSignedHeaders,
} from '../helpers/fake-slack.js';
import { eventually } from '../helpers/poll.js';
import { enrollTestAgent } from '../helpers/agent.js';
import { artifactUploader, bindDevices, createApp, createRelease, uploadArtifact } from '../helpers/ota.js';

/**
 * Slack's slash command and app mentions end to end (docs/chat.md, "Chat triggers"): a real
 * coordinator connected to the fake Slack, a real agent running the workflow, requests signed as
 * Slack signs them.
 */
const CHANNEL = 'C0DEPLOYS';

describe('Slack chat triggers', () => {
  const slack = new FakeSlack();
  let rig: DaemonRig;
  let triggerId: string;

  beforeAll(async () => {
    await slack.start();
    rig = await startDaemonRig({
      workPrefix: 'drover-chat-slack-',
      // The agent is disconnected as soon as its stream drops (the last test stops it).
      env: { ...slackEnv(slack), DROVER_AGENT_DISCONNECT_GRACE_MS: '0' },
      workflows: () => ({
        greet: [
          'name: greet',
          'params:',
          '  - {name: name, type: string, required: true}',
          '  - {name: times, type: number, default: 1, min: 1, max: 5}',
          '  - {name: loud, type: boolean, default: false}',
          'steps:',
          '  - run: echo "hello $DROVER_PARAM_NAME x$DROVER_PARAM_TIMES loud=$DROVER_PARAM_LOUD"',
          '    shell: true',
        ],
      }),
    });
    const { t } = rig;
    const { completion } = await connectWorkspace(t, t.owner, 'slack', (state) => ({ code: SLACK_CODE, state }));
    expect(completion.body.outcome, completion.text).toBe('connected');
    const created = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name: 'Greeter',
        type: 'slack',
        agentId: rig.a.agentId,
        scopeType: 'workflow',
        workflowName: 'greet',
        responseMode: 'async',
        chatTeamId: SLACK_TEAM.id,
        chatChannelId: CHANNEL,
        chatKeyword: 'greet',
      },
    });
    expect(created.status, created.text).toBe(201);
    triggerId = created.body.id;
  }, 120_000);
  afterAll(async () => {
    await rig?.close();
    await slack.close();
  });

  const post = (path: string, body: string, headers: Record<string, string>) =>
    fetch(`${rig.t.url}/v1/chat/slack/${path}`, { method: 'POST', headers, body });
  let invocations = 0;
  /** A slash command's form as Slack sends it: `trigger_id` differs for every invocation. */
  const commandBody = (text: string, fields: Record<string, string> = {}) =>
    new URLSearchParams({
      token: 'deprecated-verification-token',
      team_id: SLACK_TEAM.id,
      team_domain: 'drover-test',
      channel_id: CHANNEL,
      channel_name: 'deploys',
      user_id: 'U0ADA',
      user_name: 'ada',
      command: '/drover',
      text,
      response_url: `${slack.url}/commands/response`,
      trigger_id: `1337.42.${++invocations}`,
      ...fields,
    }).toString();
  const command = (text: string, fields: Record<string, string> = {}) => {
    const body = commandBody(text, fields);
    return post('commands', body, {
      'content-type': 'application/x-www-form-urlencoded',
      ...slackSignedHeaders(body),
    });
  };
  const jobsOfTrigger = async () =>
    (await rig.t.owner.get(`/orgs/${rig.t.orgId}/jobs?triggerId=${triggerId}&limit=200`)).body as Array<{
      id: string;
      number: number;
    }>;

  it('starts a run from /drover with typed arguments, answers at once only to its writer, and the agent runs it', async () => {
    const res = await command('greet name="Ada Lovelace" times=2 loud=yes');
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { response_type: string; text: string };
    expect(answer.response_type).toBe('ephemeral');
    const [job] = await jobsOfTrigger();
    expect(answer.text).toBe(
      `Started job #${job!.number} (Greeter, workflow \`greet\`): ${rig.t.url}/api/jobs/${job!.id}`,
    );
    rig.jobIds.push(job!.id);
    const done = await eventually(
      async () => {
        const view = await rig.t.owner.get(`/jobs/${job!.id}`);
        return view.body.status === 'success' ? view.body : null;
      },
      30_000,
      'the chat run to succeed',
    );
    expect(done).toMatchObject({
      source: 'slack',
      params: { name: 'Ada Lovelace', times: 2, loud: true },
      chatOrigin: { provider: 'slack', teamId: SLACK_TEAM.id, channelId: CHANNEL, userId: 'U0ADA', userName: 'ada' },
    });
    expect(done.logs.map((l: { text: string }) => l.text)).toContain('hello Ada Lovelace x2 loud=true');
    const entry = (await auditEntries(rig.t.owner, rig.t.orgId, 'trigger.run')).find(
      (e) => e.metadata.jobId === job!.id,
    );
    expect(entry?.metadata).toMatchObject({ source: 'slack', chatUser: { id: 'U0ADA', name: 'ada' } });
    // The outcome follows in the channel, naming the writer (a slash command has no message to thread under).
    const outcome = await eventually(
      async () => slack.posted.find((m) => m.text.includes(`job #${job!.number} Greeter: SUCCESS`)),
      10_000,
      'the outcome of the slash command run in the channel',
    );
    expect(outcome).toMatchObject({ channel: CHANNEL, text: expect.stringMatching(/^<@U0ADA> Drover job #/) });
    expect(outcome).not.toHaveProperty('thread_ts');
    expect(outcome.blocks[0]).toEqual({
      type: 'section',
      text: { type: 'mrkdwn', text: '<@U0ADA>, the run you started has ended:' },
    });
  });

  it('starts a batch from a trigger on a label selector, and posts one message when it ends', async () => {
    const created = await rig.t.owner.post(`/orgs/${rig.t.orgId}/triggers`, {
      body: {
        name: 'Fleet greeter',
        type: 'slack',
        agentSelector: 'os=linux',
        fanout: 'all',
        scopeType: 'workflow',
        workflowName: 'greet',
        responseMode: 'async',
        chatTeamId: SLACK_TEAM.id,
        chatChannelId: CHANNEL,
        chatKeyword: 'fleetgreet',
      },
    });
    expect(created.status, created.text).toBe(201);
    const res = await command('fleetgreet name=Ada');
    const answer = (await res.json()) as { text: string };
    const [batch] = (await rig.t.owner.get(`/orgs/${rig.t.orgId}/batches?limit=1`)).body;
    expect(answer.text).toBe(
      `Started batch #${batch.number} (Fleet greeter, workflow \`greet\`) on 1 agent: ${rig.t.url}/api/batches/${batch.id}. ` +
        'One message follows when every job has ended.',
    );
    const outcome = await eventually(
      async () => slack.posted.find((m) => m.text.includes(`Drover batch #${batch.number} Fleet greeter`)),
      30_000,
      "the batch's one message",
    );
    expect(outcome.text).toBe(
      `<@U0ADA> Drover batch #${batch.number} Fleet greeter (greet): SUCCESS, 1 of 1 succeeded ${rig.t.url}/api/batches/${batch.id}`,
    );
    expect(slack.posted.filter((m) => m.text.includes('Fleet greeter'))).toHaveLength(1);
    // The channel's keywords are the other tests' again.
    expect((await rig.t.owner.delete(`/orgs/${rig.t.orgId}/triggers/${created.body.id}`)).status).toBe(200);
  });

  it("posts a rollout's pause by its failure threshold to its application's channel, naming the failed devices", async () => {
    const { t } = rig;
    const app = await createApp(t.owner, t.orgId, { slug: 'kiosk-ui', updateWorkflowName: 'apply-update' });
    const notify = { provider: 'slack', teamId: SLACK_TEAM.id, channelId: CHANNEL };
    const patched = await t.owner.patch(`/orgs/${t.orgId}/apps/${app.id}`, { body: { notify } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.notify).toEqual(notify);
    const bad = await t.owner.patch(`/orgs/${t.orgId}/apps/${app.id}`, {
      body: { notify: { provider: 'irc', teamId: SLACK_TEAM.id, channelId: CHANNEL } },
    });
    expect(bad.status).toBe(422);
    const device = await enrollTestAgent(t.owner, t.orgId);
    const name = (await t.owner.get(`/orgs/${t.orgId}/agents/${device.agentId}`)).body.name as string;
    const [binding] = await bindDevices(t.owner, t.orgId, app.id, [device.agentId]);
    const artifactFileId = await uploadArtifact(await artifactUploader(t), 'kiosk ui 7', 'kiosk-ui.tar.gz');
    const r = await createRelease(t.owner, t.orgId, app.id, { version: '7.0.0', artifactFileId });
    const published = await t.owner.post(`/orgs/${t.orgId}/apps/${app.id}/releases/${r.id}/publish`, {
      body: { rollout: { waves: [100], soakSeconds: 0, maxFailureRate: 0 } },
    });
    expect(published.status, published.text).toBe(200);
    const jobId = (await t.owner.get(`/orgs/${t.orgId}/apps/${app.id}/devices/${binding!.id}`)).body.activeJobId;
    for (const step of ['accept', 'start']) {
      expect((await device.request('POST', `/v1/agent/jobs/${jobId}/${step}`)).status).toBe(200);
    }
    const failed = await device.request('POST', `/v1/agent/jobs/${jobId}/finish`, {
      status: 'failed',
      exitCode: 1,
      errorMessage: 'the new build does not start',
      output: {},
    });
    expect(failed.status).toBe(200);
    const message = await eventually(
      async () => slack.posted.find((m) => m.text.startsWith('Drover rollout of kiosk-ui 7.0.0')),
      30_000,
      "the rollout's pause in the channel",
    );
    expect(message.text).toBe(
      `Drover rollout of kiosk-ui 7.0.0 PAUSED in wave 1 of 1: 1 of 1 updates failed (100 %, above 0 %): ${name} ` +
        `${t.url}/orgs/${t.orgId}/apps/${app.id}`,
    );
    expect(message.channel).toBe(CHANNEL);
  });

  it('runs a trigger that lists who may run it only for those people', async () => {
    const patched = await rig.t.owner.patch(`/orgs/${rig.t.orgId}/triggers/${triggerId}`, {
      body: { chatAllowedUserIds: ['U0ADA'] },
    });
    expect(patched.status, patched.text).toBe(200);
    try {
      const before = (await jobsOfTrigger()).length;
      const refused = await command('greet name=Eve', { user_id: 'U0EVE', user_name: 'eve' });
      expect(((await refused.json()) as { text: string }).text).toBe(
        "Nothing was started: only the people the trigger `greet` lists may run it, and your user id `U0EVE` is not among them (an operator adds it on the trigger's page in Drover).",
      );
      expect((await jobsOfTrigger()).length).toBe(before);
      const allowed = await command('greet name=Ada');
      expect(((await allowed.json()) as { text: string }).text).toMatch(/^Started job #/);
      const jobs = await jobsOfTrigger();
      expect(jobs.length).toBe(before + 1);
      rig.jobIds.push(jobs[0]!.id);
    } finally {
      await rig.t.owner.patch(`/orgs/${rig.t.orgId}/triggers/${triggerId}`, { body: { chatAllowedUserIds: null } });
    }
  });

  it('answers a bad argument, an unknown keyword and a refused run in words, starting nothing', async () => {
    const before = (await jobsOfTrigger()).length;
    const answers: string[] = [];
    for (const text of ['greet name=x times=two', 'greet times=9', 'deploy now=yes', 'greet name="open', 'greet']) {
      const res = await command(text);
      expect(res.status).toBe(200);
      answers.push(((await res.json()) as { text: string }).text);
    }
    expect(answers[0]).toBe('Nothing was started: `times` must be a number, got `two`.');
    expect(answers[1]).toMatch(/^Nothing was started: .*`name`: is required.*`times`: must be at most 5/);
    expect(answers[2]).toMatch(/^No trigger answers `deploy` in this channel\. Keywords here: `greet`\./);
    expect(answers[3]).toMatch(/^Nothing was started: a quote \(.\) is not closed\./);
    expect(answers[4]).toMatch(/`name`: is required/);
    expect((await jobsOfTrigger()).length).toBe(before);

    const elsewhere = await command('greet name=x', { channel_id: 'C0OTHER' });
    expect(((await elsewhere.json()) as { text: string }).text).toMatch(
      /No Drover trigger listens in this channel yet/,
    );
    const stranger = await command('greet name=x', { team_id: 'T0STRANGER' });
    expect(((await stranger.json()) as { text: string }).text).toMatch(/^This workspace is not connected to Drover/);
  });

  it('refuses a forged, stale or unsigned request with 401 and starts nothing', async () => {
    const before = (await jobsOfTrigger()).length;
    const body = new URLSearchParams({
      team_id: SLACK_TEAM.id,
      channel_id: CHANNEL,
      user_id: 'U0',
      text: 'greet name=x',
    }).toString();
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const forged = await post('commands', body, { ...form, ...slackSignedHeaders(body, undefined, 'not-the-secret') });
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { message: string }).message).toBe(
      'Not a request from Slack: X-Slack-Signature does not match',
    );
    const stale = await post('commands', body, {
      ...form,
      ...slackSignedHeaders(body, Math.floor(Date.now() / 1000) - 301),
    });
    expect(stale.status).toBe(401);
    const altered = await post('commands', `${body}&x=1`, { ...form, ...slackSignedHeaders(body) });
    expect(altered.status).toBe(401);
    expect((await post('commands', body, form)).status).toBe(401);
    // Signed but incomplete: named, and nothing started.
    const partial = new URLSearchParams({ channel_id: CHANNEL, user_id: 'U0', text: 'greet name=x' }).toString();
    const missing = await post('commands', partial, { ...form, ...slackSignedHeaders(partial) });
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { details: unknown[] }).details).toEqual([
      { path: 'body.team_id', message: 'is required' },
    ]);
    const notJson = await post('events', '{not json', {
      'content-type': 'application/json',
      ...slackSignedHeaders('{not json'),
    });
    expect(notJson.status).toBe(400);
    expect((await jobsOfTrigger()).length).toBe(before);
  });

  it('starts one job for a signed command sent three times, and tells the repeats that nothing more started', async () => {
    const before = (await jobsOfTrigger()).length;
    const body = commandBody('greet name=Replay');
    const headers = { 'content-type': 'application/x-www-form-urlencoded', ...slackSignedHeaders(body) };
    // Once, then twice more at the same moment (as from two coordinators): the same signed request.
    const first = await post('commands', body, headers);
    const again = await Promise.all([post('commands', body, headers), post('commands', body, headers)]);
    const answers = [first, ...again].map((r) => r.status);
    expect(answers).toEqual([200, 200, 200]);
    const texts = await Promise.all([first, ...again].map(async (r) => ((await r.json()) as { text: string }).text));
    expect(texts[0]).toMatch(/^Started job #\d+ \(Greeter/);
    expect(texts.slice(1)).toEqual([
      'This command was already received (the same signed request, sent again): nothing more was started.',
      'This command was already received (the same signed request, sent again): nothing more was started.',
    ]);
    const jobs = await jobsOfTrigger();
    expect(jobs.length).toBe(before + 1);
    rig.jobIds.push(jobs[0]!.id);
    // The same command written again is a new request (Slack signs each one): it runs.
    const written = await command('greet name=Replay');
    expect(((await written.json()) as { text: string }).text).toMatch(/^Started job #/);
    const after = await jobsOfTrigger();
    expect(after.length).toBe(before + 2);
    rig.jobIds.push(after[0]!.id);
  });

  it('answers URL verification and starts one job for a mention Slack delivers twice', async () => {
    const challenge = JSON.stringify({ type: 'url_verification', token: 'x', challenge: 'c-123' });
    const verified = await post('events', challenge, {
      'content-type': 'application/json',
      ...slackSignedHeaders(challenge),
    });
    expect(await verified.json()).toEqual({ challenge: 'c-123' });

    const before = (await jobsOfTrigger()).length;
    const event = JSON.stringify({
      type: 'event_callback',
      team_id: SLACK_TEAM.id,
      event_id: 'Ev0MENTION1',
      event: { type: 'app_mention', user: 'U0BOB', channel: CHANNEL, text: '<@U0DROVERBOT> greet name=Bob', ts: '1.1' },
    });
    const signedAt = Math.floor(Date.now() / 1000);
    const headers = { 'content-type': 'application/json', ...slackSignedHeaders(event, signedAt) };
    expect((await post('events', event, headers)).status).toBe(200);
    // Slack's retry is signed anew (its event id finds the first delivery's job); a replay of the
    // first request is not acted on at all. Both are acknowledged.
    const retry = {
      'content-type': 'application/json',
      ...slackSignedHeaders(event, signedAt + 1),
      'x-slack-retry-num': '1',
      'x-slack-retry-reason': 'http_timeout',
    };
    for (const again of [retry, headers]) {
      const res = await post('events', event, again);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true });
    }
    const jobs = await jobsOfTrigger();
    expect(jobs.length).toBe(before + 1);
    rig.jobIds.push(jobs[0]!.id);
    const acks = await eventually(
      async () => {
        const got = slack.received('POST', '/api/chat.postEphemeral');
        return got.length > 0 ? got : null;
      },
      10_000,
      'the ephemeral acknowledgement of the mention',
    );
    expect(acks).toHaveLength(1);
    expect(acks[0]!.headers.authorization).toBe(`Bearer ${SLACK_BOT_TOKEN}`);
    expect(acks[0]!.body).toMatchObject({
      channel: CHANNEL,
      user: 'U0BOB',
      text: expect.stringMatching(/^Started job #\d+/),
    });
    await eventually(
      async () => (await rig.t.owner.get(`/jobs/${jobs[0]!.id}`)).body.status === 'success',
      30_000,
      'the mention run to succeed',
    );
    // The outcome goes to the mention's thread.
    const outcome = await eventually(
      async () => slack.posted.find((m) => m.text.includes(`job #${jobs[0]!.number} Greeter: SUCCESS`)),
      10_000,
      'the outcome of the mention run in its thread',
    );
    expect(outcome).toMatchObject({ channel: CHANNEL, thread_ts: '1.1', text: expect.stringMatching(/^<@U0BOB> /) });
    expect(outcome).not.toHaveProperty('reply_broadcast');
    const detail = await rig.t.owner.get(`/jobs/${jobs[0]!.id}`);
    expect(detail.body.notifications.map((n: { kind: string; status: string }) => [n.kind, n.status])).toEqual([
      ['answer', 'sent'],
      ['reply', 'sent'],
    ]);

    // A mention posted by a bot or an integration starts nothing (two bots could loop).
    const count = (await jobsOfTrigger()).length;
    for (const [id, fields] of [
      ['Ev0BOT1', { bot_id: 'B0OTHER' }],
      ['Ev0BOT2', { subtype: 'bot_message' }],
    ] as const) {
      const botEvent = JSON.stringify({
        type: 'event_callback',
        team_id: SLACK_TEAM.id,
        event_id: id,
        event: {
          type: 'app_mention',
          user: 'U0BOB',
          channel: CHANNEL,
          text: '<@U0DROVERBOT> greet',
          ts: '2.1',
          ...fields,
        },
      });
      const res = await post('events', botEvent, {
        'content-type': 'application/json',
        ...slackSignedHeaders(botEvent),
      });
      expect(await res.json()).toEqual({ ok: true });
    }
    expect(await jobsOfTrigger()).toHaveLength(count);
  });

  it('runs with the arguments as their writer typed them, where Slack sent them escaped (&amp;, links in <...>)', async () => {
    // Slack sends `&`, `<` and `>` of what people write as `&amp;`, `&lt;` and `&gt;`, and the
    // links it recognises in a message as `<https://...>` (api.slack.com, "Formatting text").
    const typed = 'R&D <ops> https://example.com/?a=1&b=2';
    const before = (await jobsOfTrigger()).length;
    const res = await command('greet name="R&amp;D &lt;ops&gt; https://example.com/?a=1&amp;b=2"');
    expect(((await res.json()) as { text: string }).text).toMatch(/^Started job #\d+/);
    const mention = JSON.stringify({
      type: 'event_callback',
      team_id: SLACK_TEAM.id,
      event_id: 'Ev0ESCAPED1',
      event: {
        type: 'app_mention',
        user: 'U0BOB',
        channel: CHANNEL,
        text: '<@U0DROVERBOT> greet name="R&amp;D &lt;ops&gt; <https://example.com/?a=1&amp;b=2>"',
        ts: '3.1',
        // Written in a thread: its answer is shown there.
        thread_ts: '3.0',
      },
    });
    const ack = await post('events', mention, { 'content-type': 'application/json', ...slackSignedHeaders(mention) });
    expect(await ack.json()).toEqual({ ok: true });
    const jobs = (await jobsOfTrigger()).slice(0, 2);
    expect((await jobsOfTrigger()).length).toBe(before + 2);
    rig.jobIds.push(...jobs.map((j) => j.id));
    for (const job of jobs) {
      const done = await eventually(
        async () => {
          const view = await rig.t.owner.get(`/jobs/${job.id}`);
          return view.body.status === 'success' ? view.body : null;
        },
        30_000,
        'the run to succeed',
      );
      expect(done.params).toEqual({ name: typed, times: 1, loud: false });
    }
    const answer = await eventually(
      async () => slack.received('POST', '/api/chat.postEphemeral').find((r) => r.body.thread_ts === '3.0'),
      10_000,
      'the answer to the mention in its thread',
    );
    expect(answer.body).toMatchObject({
      channel: CHANNEL,
      user: 'U0BOB',
      text: expect.stringMatching(/^Started job #\d+/),
    });
  });

  it('starts a run for an agent that is not connected, and says the job waits for it', async () => {
    await stopDaemonProcess(rig.daemon);
    await eventually(
      async () =>
        (await rig.t.owner.get(`/orgs/${rig.t.orgId}/agents/${rig.a.agentId}`)).body.status === 'disconnected',
      10_000,
      'the agent to be disconnected',
    );
    const res = await command('greet name=Later');
    const { text } = (await res.json()) as { text: string };
    const [job] = await jobsOfTrigger();
    expect(text).toMatch(new RegExp(`^Started job #${job!.number} .*: the job waits until it is\\.$`));
    expect(text).toContain('is not connected');
    expect((await rig.t.owner.get(`/jobs/${job!.id}`)).body.status).toBe('pending');
  });
});
