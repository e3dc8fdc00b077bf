import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemonRig, type DaemonRig } from '../helpers/agent-daemon.js';
import { auditEntries } from '../helpers/audit.js';
import { connectWorkspace } from '../helpers/chat.js';
import { DISCORD_APP_ID, DISCORD_CODE, DISCORD_GUILD, discordEnv, FakeDiscord } from '../helpers/fake-discord.js';
import { eventually } from '../helpers/poll.js';

/**
 * Discord's `/drover` command end to end (docs/chat.md, "Chat triggers"): interactions signed
 * with the fake application's Ed25519 key, a real agent running the workflow.
 */
const CHANNEL = '1180000000000000555';
const EPHEMERAL = 64;

/** A MESSAGE_CREATE of a user's message that mentions the bot, as Discord's Gateway sends it. */
const mention = (id: string, channelId: string) => ({
  id,
  channel_id: channelId,
  guild_id: DISCORD_GUILD.id,
  author: { id: '1180000000000000654', username: 'linus', global_name: 'Linus', discriminator: '0', avatar: null },
  member: { nick: 'linus-ops', roles: [] },
  content: `<@${DISCORD_APP_ID}> backup target=files`,
  mentions: [{ id: DISCORD_APP_ID, username: 'drover', bot: true }],
  type: 0,
  timestamp: new Date().toISOString(),
  tts: false,
  mention_everyone: false,
  mention_roles: [],
  attachments: [],
  embeds: [],
  pinned: false,
});

describe('Discord chat triggers', () => {
  const discord = new FakeDiscord();
  let rig: DaemonRig;
  let triggerId: string;

  beforeAll(async () => {
    await discord.start();
    rig = await startDaemonRig({
      workPrefix: 'drover-chat-discord-',
      env: discordEnv(discord),
      workflows: () => ({
        backup: [
          'name: backup',
          'params:',
          '  - {name: target, type: enum, options: [db, files], required: true}',
          '  - {name: keep, type: number, default: 7}',
          'steps:',
          '  - run: echo "backing up $DROVER_PARAM_TARGET, keeping $DROVER_PARAM_KEEP"',
          '    shell: true',
        ],
      }),
    });
    const { t } = rig;
    await connectWorkspace(t, t.owner, 'discord', (state) => ({ code: DISCORD_CODE, state }));
    const created = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        // Markdown in a name others chose is shown as written, never rendered (a link, a ping).
        name: 'Backups *nightly*',
        type: 'discord',
        agentId: rig.a.agentId,
        scopeType: 'workflow',
        workflowName: 'backup',
        responseMode: 'async',
        chatTeamId: DISCORD_GUILD.id,
        chatChannelId: CHANNEL,
        chatKeyword: 'backup',
      },
    });
    expect(created.status, created.text).toBe(201);
    triggerId = created.body.id;
  }, 120_000);
  afterAll(async () => {
    await rig?.close();
    await discord.close();
  });

  const send = (
    interaction: object,
    sign: (body: string) => Record<string, string> = (b) => discord.signedHeaders(b),
  ) => {
    const body = JSON.stringify(interaction);
    return fetch(`${rig.t.url}/v1/chat/discord/interactions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...sign(body) },
      body,
    });
  };
  let nextId = 1;
  const command = (text: string) => ({
    id: `11800000000000${String(nextId++).padStart(5, '0')}`,
    application_id: '1180000000000000001',
    type: 2,
    guild_id: DISCORD_GUILD.id,
    channel_id: CHANNEL,
    member: { user: { id: '1180000000000000321', username: 'grace', global_name: 'Grace' }, nick: null },
    token: 'interaction-token',
    version: 1,
    data: { id: '1180000000000001000', name: 'drover', type: 1, options: [{ name: 'command', type: 3, value: text }] },
  });
  const postedToChannel = () =>
    discord.received('POST', `/api/v10/channels/${CHANNEL}/messages`).map((r) => r.body as Record<string, any>);
  const jobs = async () =>
    (await rig.t.owner.get(`/orgs/${rig.t.orgId}/jobs?triggerId=${triggerId}&limit=200`)).body as Array<{
      id: string;
      number: number;
    }>;

  it('answers PING with PONG', async () => {
    const res = await send({ id: '1', type: 1, application_id: '1180000000000000001', token: 't', version: 1 });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ type: 1 });
  });

  it('starts a run from /drover, answers the writer alone at once, and the agent runs it; a redelivery starts nothing more', async () => {
    const interaction = command('backup target=db keep=3');
    const signedAt = Math.floor(Date.now() / 1000);
    const res = await send(interaction, (b) => discord.signedHeaders(b, signedAt));
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { type: number; data: { content: string; flags: number } };
    const [job] = await jobs();
    expect(answer).toEqual({
      type: 4,
      data: {
        content: `Started job #${job!.number} (Backups \\*nightly\\*, workflow \`backup\`): ${rig.t.url}/api/jobs/${job!.id}`,
        flags: EPHEMERAL,
      },
    });
    rig.jobIds.push(job!.id);
    // The same signed request again: not acted on, and said so. The same interaction signed anew
    // (Discord never sends one twice): its id finds the first job.
    const body = JSON.stringify(interaction);
    const signed = discord.signedHeaders(body, signedAt);
    const replays = await Promise.all(
      [signed, signed, discord.signedHeaders(body, signedAt + 1)].map(async (headers) => {
        const replay = await fetch(`${rig.t.url}/v1/chat/discord/interactions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body,
        });
        return ((await replay.json()) as { data: { content: string } }).data.content;
      }),
    );
    expect(replays.sort()).toEqual(
      [
        answer.data.content,
        'This interaction was already received (the same signed request, sent again): nothing more was started.',
        'This interaction was already received (the same signed request, sent again): nothing more was started.',
      ].sort(),
    );
    expect(await jobs()).toHaveLength(1);
    const done = await eventually(
      async () => {
        const view = await rig.t.owner.get(`/jobs/${job!.id}`);
        return view.body.status === 'success' ? view.body : null;
      },
      30_000,
      'the Discord run to succeed',
    );
    expect(done).toMatchObject({
      source: 'discord',
      params: { target: 'db', keep: 3 },
      chatOrigin: {
        provider: 'discord',
        teamId: DISCORD_GUILD.id,
        channelId: CHANNEL,
        userId: '1180000000000000321',
        userName: 'Grace',
      },
    });
    // Who it was, by name as well as by id, in the audit log too (as for Slack).
    const entry = (await auditEntries(rig.t.owner, rig.t.orgId, 'trigger.run')).find(
      (e) => e.metadata.jobId === job!.id,
    );
    expect(entry?.metadata).toMatchObject({
      source: 'discord',
      chatUser: { id: '1180000000000000321', name: 'Grace' },
    });
    // The outcome follows in the channel, naming (and pinging) the writer alone.
    const outcome = await eventually(
      async () =>
        postedToChannel().find((m) => m.content.includes(`job #${job!.number} Backups \\*nightly\\*: SUCCESS`)),
      10_000,
      'the outcome of the /drover run in the channel',
    );
    expect(outcome.content).toMatch(
      new RegExp(`^<@1180000000000000321> Drover job #${job!.number} Backups \\\\\\*nightly\\\\\\*: SUCCESS`),
    );
    expect(outcome.allowed_mentions).toEqual({ parse: [], users: ['1180000000000000321'] });
    expect(outcome.embeds[0]).toMatchObject({ title: `#${job!.number} Backups *nightly*: SUCCESS` });
    expect(outcome).not.toHaveProperty('message_reference');
    const detail = await rig.t.owner.get(`/jobs/${job!.id}`);
    expect(detail.body.notifications).toMatchObject([{ kind: 'reply', provider: 'discord', channelId: CHANNEL }]);
  });

  it('answers a value the workflow refuses in words, and starts nothing', async () => {
    const res = await send(command('backup target=everything'));
    const answer = (await res.json()) as { data: { content: string; flags: number } };
    expect(answer.data.flags).toBe(EPHEMERAL);
    expect(answer.data.content).toMatch(/^Nothing was started: .*`target`: must be one of `db`, `files`/);
    expect(await jobs()).toHaveLength(1);
  });

  it("cuts an answer that names a long argument to Discord's 2000 characters, which Discord would refuse whole", async () => {
    // The `command` option holds up to 6000 characters; the answer names the unknown keyword.
    const keyword = 'k'.repeat(5000);
    const res = await send(command(`${keyword} target=db`));
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { type: number; data: { content: string; flags: number } };
    expect(answer.type).toBe(4);
    expect(answer.data.flags).toBe(EPHEMERAL);
    expect(answer.data.content).toHaveLength(2000);
    expect(answer.data.content).toMatch(/^No trigger answers `k+…$/);
    expect(await jobs()).toHaveLength(1);
  });

  it('refuses a forged, stale or unsigned interaction with 401', async () => {
    const other = new FakeDiscord();
    const forged = await send(command('backup target=db'), (b) => other.signedHeaders(b));
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { message: string }).message).toBe(
      'Not a request from Discord: X-Signature-Ed25519 does not match',
    );
    const stale = await send(command('backup target=db'), (b) =>
      discord.signedHeaders(b, Math.floor(Date.now() / 1000) - 301),
    );
    expect(stale.status).toBe(401);
    expect((await send(command('backup target=db'), () => ({}))).status).toBe(401);
    const broken = '{not json';
    const notJson = await fetch(`${rig.t.url}/v1/chat/discord/interactions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...discord.signedHeaders(broken) },
      body: broken,
    });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { message: string }).message).toBe('The interaction is not JSON');
    expect(await jobs()).toHaveLength(1);
  });

  it('starts a run from a mention of the bot on the Gateway and replies to the message, once per message', async () => {
    await eventually(async () => discord.gatewayReady(), 20_000, 'the coordinator to identify on the Gateway');
    const before = (await jobs()).length;
    const message = mention('1180000000000042001', CHANNEL);
    // A message posted through a webhook (a CI job, another app's integration): its author is the
    // webhook's id and name, not a user, and it carries `webhook_id` (Discord's message object).
    const fromWebhook = {
      ...message,
      id: '1180000000000042000',
      webhook_id: '1180000000000000888',
      author: { id: '1180000000000000888', username: 'CI', discriminator: '0000', avatar: null },
    };
    discord.dispatchMessage(fromWebhook);
    discord.dispatchMessage(message);
    discord.dispatchMessage(message); // a replay after a resume
    discord.dispatchMessage({ ...message, id: '1180000000000042002', content: 'backup target=files' }); // no mention
    discord.dispatchMessage({ ...message, id: '1180000000000042003', author: { ...message.author, bot: true } });
    const answers = await eventually(
      async () => {
        const got = postedToChannel().filter((m) => m.content.startsWith('Started job'));
        return got.length > 0 ? got : null;
      },
      10_000,
      'the answer to the mention',
    );
    const all = await jobs();
    expect(all.length).toBe(before + 1);
    rig.jobIds.push(all[0]!.id);
    expect(answers).toEqual([
      {
        content: `Started job #${all[0]!.number} (Backups \\*nightly\\*, workflow \`backup\`): ${rig.t.url}/api/jobs/${all[0]!.id}`,
        message_reference: { message_id: message.id, fail_if_not_exists: false },
        allowed_mentions: { parse: [], replied_user: false },
      },
    ]);
    const view = await eventually(
      async () => {
        const res = await rig.t.owner.get(`/jobs/${all[0]!.id}`);
        return res.body.status === 'success' ? res.body : null;
      },
      30_000,
      'the mention run to succeed',
    );
    expect(view.chatOrigin).toMatchObject({ provider: 'discord', userName: 'linus-ops', channelId: CHANNEL });
    // The outcome is a reply to the same message, which pings its writer.
    const outcome = await eventually(
      async () =>
        postedToChannel().find((m) => m.content.includes(`job #${all[0]!.number} Backups \\*nightly\\*: SUCCESS`)),
      10_000,
      'the outcome of the mention run',
    );
    expect(outcome).toMatchObject({
      message_reference: { message_id: message.id, fail_if_not_exists: false },
      allowed_mentions: { parse: [], replied_user: true },
    });
    const detail = await rig.t.owner.get(`/jobs/${all[0]!.id}`);
    expect(detail.body.notifications.map((n: { kind: string; status: string }) => [n.kind, n.status])).toEqual([
      ['answer', 'sent'],
      ['reply', 'sent'],
    ]);
    // Long after, the webhook's message has started nothing and got no answer.
    expect(await jobs()).toHaveLength(before + 1);
    expect(postedToChannel().filter((m) => m.message_reference?.message_id === fromWebhook.id)).toEqual([]);
  });

  it("runs a mention written in a thread as its channel's command and answers in the thread", async () => {
    const thread = '1180000000000009997';
    discord.threads.set(thread, CHANNEL);
    const inThread = () =>
      discord.received('POST', `/api/v10/channels/${thread}/messages`).map((r) => r.body as Record<string, any>);
    const message = mention('1180000000000042101', thread);
    const before = (await jobs()).length;
    discord.dispatchMessage(message);
    const answer = await eventually(
      async () => inThread().find((m) => m.content.startsWith('Started job')),
      10_000,
      'the answer in the thread',
    );
    const [job] = await jobs();
    expect((await jobs()).length).toBe(before + 1);
    rig.jobIds.push(job!.id);
    expect(answer.message_reference).toEqual({ message_id: message.id, fail_if_not_exists: false });
    const outcome = await eventually(
      async () => inThread().find((m) => m.content.includes(`job #${job!.number} Backups \\*nightly\\*: SUCCESS`)),
      30_000,
      'the outcome in the thread',
    );
    expect(outcome.message_reference).toEqual({ message_id: message.id, fail_if_not_exists: false });
    expect((await rig.t.owner.get(`/jobs/${job!.id}`)).body.chatOrigin).toMatchObject({ channelId: thread });
    // Nothing of it went to the channel itself.
    expect(postedToChannel().filter((m) => m.message_reference?.message_id === message.id)).toEqual([]);
  });

  it("runs /drover typed in a thread as its channel's command, as Slack's threads are their channel's", async () => {
    const inThread = {
      ...command('backup target=db keep=3'),
      channel_id: '1180000000000009999',
      channel: { id: '1180000000000009999', type: 11, parent_id: CHANNEL, name: 'ops thread' },
    };
    const res = await send(inThread);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { data: { content: string } };
    const [job] = await jobs();
    expect(answer.data.content).toContain(`Started job #${job!.number}`);
    rig.jobIds.push(job!.id);
    // A thread of another channel finds no trigger.
    const elsewhere = {
      ...command('backup target=db keep=3'),
      channel_id: '1180000000000009998',
      channel: { id: '1180000000000009998', type: 11, parent_id: '1180000000000000777', name: 'other' },
    };
    expect(((await (await send(elsewhere)).json()) as { data: { content: string } }).data.content).toContain(
      'No Drover trigger listens in this channel',
    );
  });
});
