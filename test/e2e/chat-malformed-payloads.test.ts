import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { discordEnv, FakeDiscord } from '../helpers/fake-discord.js';
import { FakeSlack, slackEnv, slackSignedHeaders } from '../helpers/fake-slack.js';

/**
 * Signed chat requests whose JSON is not of the shape the providers document: a signature proves
 * who sent the bytes, not their shape, so such a body is the provider's mistake (400, or a field
 * read as absent), never a 500. No workspace is connected: nothing here could start a run.
 */
describe('signed chat requests of an unexpected shape', () => {
  const slack = new FakeSlack();
  const discord = new FakeDiscord();
  let t: TestCoordinator;
  let sent = 0;

  beforeAll(async () => {
    await slack.start();
    await discord.start();
    t = await startTestCoordinator({ env: { ...slackEnv(slack), ...discordEnv(discord) } });
  });
  afterAll(async () => {
    await t?.close();
    await discord.close();
    await slack.close();
  });

  // Each body differs (`n`), so that none is refused as a replay of another.
  const unique = (json: string) => json.replace('"$n"', String(++sent));
  const slackEvent = (json: string) => {
    const body = unique(json);
    return fetch(`${t.url}/v1/chat/slack/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...slackSignedHeaders(body) },
      body,
    });
  };
  const interaction = (json: string) => {
    const body = unique(json);
    return fetch(`${t.url}/v1/chat/discord/interactions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...discord.signedHeaders(body) },
      body,
    });
  };

  it('answers a Slack event that is JSON but no object 400, and reads fields of other types as absent', async () => {
    for (const body of ['null', '[1]']) {
      const res = await slackEvent(body);
      expect(res.status, body).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'bad_request', message: 'The event is not a JSON object' });
    }
    const mention = (event: string) =>
      slackEvent(
        `{"type":"event_callback","team_id":"T0","event_id":"$n","event":{"type":"app_mention","channel":"C0",${event}}}`,
      );
    // A user that is no string: the mention lacks its user.
    const noUser = await mention('"user":{"id":"U0"},"text":"hi"');
    expect(noUser.status).toBe(400);
    expect(await noUser.json()).toMatchObject({ message: 'The mention lacks its team, channel or user' });
    // A text that is no string is no text: the workspace is not connected, which is said.
    for (const event of ['"user":"U0","text":5', '"user":"U0","text":"hi","ts":{},"thread_ts":[1]']) {
      const res = await mention(event);
      expect(res.status, event).toBe(200);
      expect(await res.json()).toEqual({ ok: true });
    }
    const event = await slackEvent('{"type":"event_callback","event":"$n"}');
    expect(event.status).toBe(200);
    const challenge = await slackEvent('{"type":"url_verification","challenge":{"n":"$n"}}');
    expect(await challenge.json()).toEqual({ challenge: '' });
  });

  it('answers a Discord interaction that is JSON but no object 400, and reads fields of other types as absent', async () => {
    for (const body of ['null', '"ping"']) {
      const res = await interaction(body);
      expect(res.status, body).toBe(400);
      expect(await res.json()).toMatchObject({
        code: 'bad_request',
        message: 'The interaction is not a JSON object',
      });
    }
    const command = (fields: string) =>
      interaction(`{"type":2,"id":"$n","data":{"name":"drover","options":"backup"},${fields}}`);
    const answers: string[] = [];
    for (const fields of [
      '"guild_id":"G0","channel_id":"C0","member":{"user":{"id":"U0"},"nick":7}',
      '"guild_id":1,"channel_id":"C0","member":"U0"',
      '"guild_id":"G0","channel":{"id":["C0"]},"user":{"id":"U0","username":{}}',
    ]) {
      const res = await command(fields);
      expect(res.status, fields).toBe(200);
      answers.push(((await res.json()) as { data: { content: string } }).data.content);
    }
    expect(answers[0]).toMatch(/^This workspace is not connected to Drover/);
    expect(answers.slice(1)).toEqual([
      'Drover answers `/drover` in the channels of a server, not in direct messages.',
      'Drover answers `/drover` in the channels of a server, not in direct messages.',
    ]);
    const notCommand = await interaction('{"type":2,"id":"$n","data":[1]}');
    expect(((await notCommand.json()) as { data: { content: string } }).data.content).toBe(
      'Drover only answers its `/drover` command.',
    );
  });
});
