import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEntries } from '../helpers/audit.js';
import { connectWorkspace } from '../helpers/chat.js';
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

  const integrationsPage = (query: Record<string, string>) => {
    const url = new URL(`${t.url}/orgs/${t.orgId}/integrations`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    return url.toString();
  };

  it("connects a Slack workspace: Slack's consent page, the code exchanged, the bot token sealed at rest", async () => {
    const { authorizeUrl, callback } = await connectWorkspace(t, t.owner, 'slack', (state) => ({
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
    expect(callback.status).toBe(302);
    expect(callback.headers.get('location')).toBe(integrationsPage({ connected: 'slack', team: SLACK_TEAM.name }));
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

  it('connects a Discord guild through the bot install flow and registers /drover there', async () => {
    const { authorizeUrl, callback } = await connectWorkspace(t, t.owner, 'discord', (state) => ({
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
    expect(callback.headers.get('location')).toBe(integrationsPage({ connected: 'discord', team: DISCORD_GUILD.name }));
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
    let used = '';
    await connectWorkspace(t, t.owner, 'slack', (state) => {
      used = state;
      return { code: SLACK_CODE, state };
    });
    const again = await fetch(`${t.url}/v1/chat/slack/oauth/callback?code=${SLACK_CODE}&state=${used}`, {
      redirect: 'manual',
    });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({
      code: 'bad_request',
      message: expect.stringContaining('start again from the dashboard'),
    });
    // A Slack state is not a Discord one.
    const { callback } = await connectWorkspace(t, t.owner, 'slack', (state) => ({ code: DISCORD_CODE, state }));
    expect(callback.status).toBe(302);
    const none = await fetch(`${t.url}/v1/chat/discord/oauth/callback?code=x`, { redirect: 'manual' });
    expect(none.status).toBe(400);
  });

  it("goes back to the dashboard with the provider's refusal: a bad code, consent denied", async () => {
    const bad = await connectWorkspace(t, t.owner, 'slack', (state) => ({ code: 'stale', state }));
    expect(bad.callback.headers.get('location')).toBe(
      integrationsPage({ error: 'Slack was not connected: Slack answered: invalid_code' }),
    );
    const denied = await connectWorkspace(t, t.owner, 'discord', (state) => ({ error: 'access_denied', state }));
    expect(denied.callback.headers.get('location')).toBe(
      integrationsPage({ error: 'Discord was not connected: the app was not allowed' }),
    );
  });

  it("refuses a workspace that is another organization's", async () => {
    const other = await outsider(t.owner, t.orgId, 'other-owner@example.test');
    const started = await other.client.post<{ authorizeUrl: string }>(
      `/orgs/${other.orgId}/chat-integrations/slack/connect`,
    );
    const state = new URL(started.body.authorizeUrl).searchParams.get('state')!;
    const res = await fetch(`${t.url}/v1/chat/slack/oauth/callback?code=${SLACK_CODE}&state=${state}`, {
      redirect: 'manual',
    });
    const location = new URL(res.headers.get('location')!);
    expect(location.pathname).toBe(`/orgs/${other.orgId}/integrations`);
    expect(location.searchParams.get('error')).toBe(
      `Slack workspace ${SLACK_TEAM.name} is connected to another organization: disconnect it there first`,
    );
    expect((await other.client.get(`/orgs/${other.orgId}/chat-integrations`)).body).toEqual([]);
    // Nor can they see or disconnect ours.
    const ours = (await t.owner.get(`/orgs/${t.orgId}/chat-integrations`)).body[0];
    expect((await other.client.delete(`/orgs/${t.orgId}/chat-integrations/${ours.id}`)).status).toBe(404);
    expect((await other.client.delete(`/orgs/${other.orgId}/chat-integrations/${ours.id}`)).status).toBe(404);
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

  it('answers connecting with 409 naming the settings, and the callback with 409 too', async () => {
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
  });
});
