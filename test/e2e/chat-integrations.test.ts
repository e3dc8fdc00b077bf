import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEntries } from '../helpers/audit.js';
import { CHAT_CONNECT_COOKIE, connectWorkspace, finishConnect, startConnect } from '../helpers/chat.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import {
  DISCORD_APP_ID,
  DISCORD_BOT_TOKEN,
  DISCORD_CODE,
  DISCORD_GUILD,
  discordEnv,
  FakeDiscord,
} from '../helpers/fake-discord.js';
import { FakeSlack, SLACK_BOT_TOKEN, SLACK_CODE, SLACK_TEAM, slackEnv } from '../helpers/fake-slack.js';
import type { ApiClient } from '../helpers/http.js';
import { addUser, outsider } from '../helpers/members.js';

describe('connecting chat workspaces', () => {
  const slack = new FakeSlack();
  const discord = new FakeDiscord();
  let t: TestCoordinator;
  let member: ApiClient;
  beforeAll(async () => {
    await Promise.all([slack.start(), discord.start()]);
    t = await startTestCoordinator({ env: { ...slackEnv(slack), ...discordEnv(discord) } });
    member = (await addUser(t.owner, t.orgId, 'member@example.test')).client;
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([slack.close(), discord.close()]);
  });

  const finishingPage = (provider: string, query: Record<string, string>) => {
    const url = new URL(`${t.url}/chat/${provider}/finish`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    return url.toString();
  };

  it("connects a Slack workspace: Slack's consent page, the code exchanged, the bot token sealed at rest", async () => {
    const { authorizeUrl, callback, completion } = await connectWorkspace(t, t.owner, 'slack', (state) => ({
      code: SLACK_CODE,
      state,
    }));
    expect(`${authorizeUrl.origin}${authorizeUrl.pathname}`).toBe(`${slack.url}/oauth/v2/authorize`);
    expect(Object.fromEntries(authorizeUrl.searchParams)).toEqual({
      client_id: '1111.2222',
      scope: 'app_mentions:read,chat:write,chat:write.public,commands',
      redirect_uri: `${t.url}/v1/chat/slack/oauth/callback`,
      state: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    // The callback sends the browser on to the dashboard's page that finishes the flow.
    expect(callback.status).toBe(303);
    expect(callback.headers.get('location')).toBe(
      finishingPage('slack', { code: SLACK_CODE, state: authorizeUrl.searchParams.get('state')! }),
    );
    expect(completion.status, completion.text).toBe(200);
    expect(completion.body).toEqual({
      outcome: 'connected',
      orgId: t.orgId,
      integration: expect.objectContaining({ provider: 'slack', teamId: SLACK_TEAM.id, teamName: SLACK_TEAM.name }),
    });
    expect(slack.received('POST', '/api/oauth.v2.access').at(-1)?.body).toEqual({
      client_id: '1111.2222',
      client_secret: 'slack-client-secret',
      code: SLACK_CODE,
      redirect_uri: `${t.url}/v1/chat/slack/oauth/callback`,
    });

    const list = await member.get(`/orgs/${t.orgId}/chat-integrations`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      {
        id: expect.any(String),
        provider: 'slack',
        teamId: SLACK_TEAM.id,
        teamName: SLACK_TEAM.name,
        scopes: 'app_mentions:read,chat:write,chat:write.public,commands',
        connectedByUserId: expect.any(String),
        createdAt: expect.any(String),
      },
    ]);
    const row = await t.sql.get<{ access_token: string }>('SELECT access_token FROM chat_integrations');
    expect(row!.access_token).toMatch(/^v1\./);
    expect(row!.access_token).not.toContain(SLACK_BOT_TOKEN);
    expect(await t.coordinator.ctx.chatIntegrations.tokenOf('slack', SLACK_TEAM.id)).toBe(SLACK_BOT_TOKEN);

    const [entry] = await auditEntries(t.owner, t.orgId, 'chat_integration.connect');
    expect(entry).toMatchObject({
      actorType: 'user',
      targetType: 'chat_integration',
      targetId: list.body[0].id,
      metadata: { provider: 'slack', teamId: SLACK_TEAM.id, teamName: SLACK_TEAM.name },
    });
  });

  it('connects nothing when Discord refuses to register /drover in the guild, as its answer says', async () => {
    const commands = `/api/v10/applications/${DISCORD_APP_ID}/guilds/${DISCORD_GUILD.id}/commands`;
    discord.failNext('PUT', commands, { status: 403, body: { message: 'Missing Access', code: 50001 } });
    const { completion } = await connectWorkspace(t, t.owner, 'discord', (state) => ({ code: DISCORD_CODE, state }));
    expect(completion.body).toMatchObject({
      outcome: 'failed',
      message: expect.stringMatching(/^Discord was not connected: /),
    });
    const list = await t.owner.get(`/orgs/${t.orgId}/chat-integrations`);
    expect(list.body.map((i: { provider: string }) => i.provider)).not.toContain('discord');
    discord.requests.length = 0; // the next test counts its own registration
  });

  it('connects a Discord guild through the bot install flow and registers /drover there', async () => {
    const { authorizeUrl, callback, completion } = await connectWorkspace(t, t.owner, 'discord', (state) => ({
      code: DISCORD_CODE,
      state,
      guild_id: DISCORD_GUILD.id,
      permissions: '84992',
    }));
    expect(Object.fromEntries(authorizeUrl.searchParams)).toMatchObject({
      client_id: DISCORD_APP_ID,
      scope: 'bot applications.commands',
      permissions: '84992',
      response_type: 'code',
      redirect_uri: `${t.url}/v1/chat/discord/oauth/callback`,
    });
    // Discord's own parameters (guild_id, permissions) stay behind: the code and the state go on.
    expect(callback.headers.get('location')).toBe(
      finishingPage('discord', { code: DISCORD_CODE, state: authorizeUrl.searchParams.get('state')! }),
    );
    expect(completion.body).toMatchObject({
      outcome: 'connected',
      integration: { provider: 'discord', teamId: DISCORD_GUILD.id, teamName: DISCORD_GUILD.name },
    });
    const registered = discord.received(
      'PUT',
      `/api/v10/applications/${DISCORD_APP_ID}/guilds/${DISCORD_GUILD.id}/commands`,
    );
    expect(registered).toHaveLength(1);
    expect(registered[0]!.headers.authorization).toBe(`Bot ${DISCORD_BOT_TOKEN}`);
    expect(registered[0]!.body).toEqual([
      expect.objectContaining({
        name: 'drover',
        options: [expect.objectContaining({ type: 3, name: 'command', required: true })],
      }),
    ]);
    const list = await t.owner.get(`/orgs/${t.orgId}/chat-integrations`);
    expect(list.body.map((i: { provider: string; teamId: string }) => [i.provider, i.teamId])).toEqual([
      ['slack', SLACK_TEAM.id],
      ['discord', DISCORD_GUILD.id],
    ]);
  });

  it('uses a state once, and refuses an unknown one with a plain 400', async () => {
    const started = await startConnect(t, t.owner, 'slack');
    const query = { code: SLACK_CODE, state: started.state };
    expect((await finishConnect(t, t.owner, 'slack', query, started.browserKey)).completion.status).toBe(200);
    const again = await finishConnect(t, t.owner, 'slack', query, started.browserKey);
    expect(again.completion.status).toBe(400);
    expect(again.completion.body).toMatchObject({
      code: 'bad_request',
      message: expect.stringContaining('start again from the dashboard'),
    });
    // A Slack state is not a Discord one.
    const slackState = await startConnect(t, t.owner, 'slack');
    const crossed = await finishConnect(
      t,
      t.owner,
      'discord',
      { code: DISCORD_CODE, state: slackState.state },
      slackState.browserKey,
    );
    expect(crossed.completion.status).toBe(400);
    // No state at all: named.
    const none = await t.owner.post('/chat/discord/oauth/complete', { body: { code: 'x' } });
    expect(none.status).toBe(422);
    expect(none.body.details).toEqual([{ path: 'body.state', message: 'is required' }]);
  });

  it("goes back to the dashboard with the provider's refusal: a bad code, consent denied", async () => {
    const bad = await connectWorkspace(t, t.owner, 'slack', (state) => ({ code: 'stale', state }));
    expect(bad.completion.body).toEqual({
      outcome: 'failed',
      orgId: t.orgId,
      message: 'Slack was not connected: Slack answered: invalid_code',
    });
    const denied = await connectWorkspace(t, t.owner, 'discord', (state) => ({ error: 'access_denied', state }));
    expect(new URL(denied.callback.headers.get('location')!).searchParams.get('error')).toBe('access_denied');
    expect(denied.completion.body).toEqual({
      outcome: 'failed',
      orgId: t.orgId,
      message: 'Discord was not connected: the app was not allowed',
    });
  });

  it("refuses a workspace that is another organization's", async () => {
    const other = await outsider(t.owner, t.orgId, 'other-owner@example.test');
    const started = await startConnect(t, other.client, 'slack', other.orgId);
    const { completion } = await finishConnect(
      t,
      other.client,
      'slack',
      { code: SLACK_CODE, state: started.state },
      started.browserKey,
    );
    expect(completion.body).toEqual({
      outcome: 'failed',
      orgId: other.orgId,
      message: `Slack workspace ${SLACK_TEAM.name} is connected to another organization: disconnect it there first`,
    });
    expect((await other.client.get(`/orgs/${other.orgId}/chat-integrations`)).body).toEqual([]);
    // Nor can they see or disconnect ours.
    const ours = (await t.owner.get(`/orgs/${t.orgId}/chat-integrations`)).body[0];
    expect((await other.client.delete(`/orgs/${t.orgId}/chat-integrations/${ours.id}`)).status).toBe(404);
    expect((await other.client.delete(`/orgs/${other.orgId}/chat-integrations/${ours.id}`)).status).toBe(404);
  });

  it("binds the flow to the starter's browser: a consent link sent to another workspace's admin connects nothing", async () => {
    // Connect sets the cookie the flow is bound to: HttpOnly, SameSite=Strict, the API only, ten minutes.
    const res = await t.owner.post(`/orgs/${t.orgId}/chat-integrations/slack/connect`);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${CHAT_CONNECT_COOKIE}=`));
    expect(cookie).toMatch(
      new RegExp(`^${CHAT_CONNECT_COOKIE}=[A-Za-z0-9_-]{43}; Max-Age=600; Path=/v1/; HttpOnly; SameSite=Strict$`),
    );

    // An owner of their own organization sends a real consent link to the admin of a workspace.
    const attacker = await outsider(t.owner, t.orgId, 'attacker@example.test');
    const exchanges = slack.received('POST', '/api/oauth.v2.access').length;
    const refusals: string[] = [];
    for (const [who, client, key] of [
      // The admin's browser, signed in to Drover or not, holds no cookie of the attacker's.
      ['the admin, without the cookie', t.owner, null],
      ['the admin, with a cookie of their own', t.owner, (await startConnect(t, t.owner, 'slack')).browserKey],
    ] as const) {
      const link = await startConnect(t, attacker.client, 'slack', attacker.orgId);
      const { completion } = await finishConnect(t, client, 'slack', { code: SLACK_CODE, state: link.state }, key);
      refusals.push(`${who}: ${completion.status} ${completion.body.message}`);
    }
    expect(refusals).toEqual([
      expect.stringMatching(/^the admin, without the cookie: 403 This Slack sign-in was started in another browser/),
      expect.stringMatching(
        /^the admin, with a cookie of their own: 403 This Slack sign-in was started in another browser/,
      ),
    ]);
    // The attacker's own cookie with another user's session is refused too.
    const link = await startConnect(t, attacker.client, 'slack', attacker.orgId);
    const other = await finishConnect(t, t.owner, 'slack', { code: SLACK_CODE, state: link.state }, link.browserKey);
    expect(other.completion.status).toBe(403);
    expect(other.completion.body.message).toMatch(/^This Slack sign-in was started by another user/);
    expect(slack.received('POST', '/api/oauth.v2.access')).toHaveLength(exchanges);
    expect((await attacker.client.get(`/orgs/${attacker.orgId}/chat-integrations`)).body).toEqual([]);
    // Without a session at all: 401, as every dashboard call.
    const anonymous = await t.owner.withToken(null).post('/chat/slack/oauth/complete', { body: { state: link.state } });
    expect(anonymous.status).toBe(401);
  });

  it('connects nothing for an owner removed while Slack exchanged the code', async () => {
    const leaver = await addUser(t.owner, t.orgId, 'leaving-owner@example.test', 'owner');
    const started = await startConnect(t, leaver.client, 'slack');
    const exchange = slack.holdNext('POST', '/api/oauth.v2.access');
    const finishing = finishConnect(
      t,
      leaver.client,
      'slack',
      { code: SLACK_CODE, state: started.state },
      started.browserKey,
    );
    await exchange.arrived;
    expect((await t.owner.delete(`/orgs/${t.orgId}/members/${leaver.userId}`)).status).toBe(200);
    exchange.release();
    const { completion } = await finishing;
    expect(completion.status).toBe(403);
    expect(completion.body.message).toBe(
      'Only an owner of the organization connects a Slack workspace, and you no longer are one: nothing was connected',
    );
    const connected = (await t.owner.get(`/orgs/${t.orgId}/chat-integrations`)).body;
    expect(connected.filter((i: { connectedByUserId: string }) => i.connectedByUserId === leaver.userId)).toEqual([]);
  });

  it('lets owners only connect and disconnect; disconnecting is audited', async () => {
    expect((await member.post(`/orgs/${t.orgId}/chat-integrations/slack/connect`)).status).toBe(403);
    const [slackIntegration] = (await t.owner.get(`/orgs/${t.orgId}/chat-integrations`)).body;
    expect((await member.delete(`/orgs/${t.orgId}/chat-integrations/${slackIntegration.id}`)).status).toBe(403);
    const gone = await t.owner.delete(`/orgs/${t.orgId}/chat-integrations/${slackIntegration.id}`);
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({ provider: 'slack', teamId: SLACK_TEAM.id });
    expect((await t.owner.delete(`/orgs/${t.orgId}/chat-integrations/${slackIntegration.id}`)).status).toBe(404);
    expect(
      (await t.owner.get(`/orgs/${t.orgId}/chat-integrations`)).body.map((i: { provider: string }) => i.provider),
    ).toEqual(['discord']);
    const [entry] = await auditEntries(t.owner, t.orgId, 'chat_integration.disconnect');
    expect(entry).toMatchObject({ targetId: slackIntegration.id, metadata: { provider: 'slack' } });
  });

  it('tells which providers are set up, and answers an unknown provider 404', async () => {
    expect((await member.get(`/orgs/${t.orgId}/chat-providers`)).body).toEqual([
      { provider: 'slack', configured: true },
      { provider: 'discord', configured: true },
    ]);
    expect((await t.owner.post(`/orgs/${t.orgId}/chat-integrations/teams/connect`)).status).toBe(404);
  });
});

describe('chat providers that are not set up', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator();
  });
  afterAll(() => t?.close());

  it('answers connecting with 409 naming the settings, and the callback and its finishing call with 409 too', async () => {
    const res = await t.owner.post(`/orgs/${t.orgId}/chat-integrations/slack/connect`);
    expect(res.status).toBe(409);
    expect(res.body.message).toBe(
      'Slack is not set up on this coordinator: its operator sets DROVER_SLACK_CLIENT_ID, DROVER_SLACK_CLIENT_SECRET and DROVER_SLACK_SIGNING_SECRET (docs/chat.md)',
    );
    expect((await t.owner.get(`/orgs/${t.orgId}/chat-providers`)).body).toEqual([
      { provider: 'slack', configured: false },
      { provider: 'discord', configured: false },
    ]);
    const callback = await fetch(`${t.url}/v1/chat/discord/oauth/callback?code=x&state=y`, { redirect: 'manual' });
    expect(callback.status).toBe(409);
    expect((await t.owner.post('/chat/discord/oauth/complete', { body: { state: 'y' } })).status).toBe(409);
  });
});
