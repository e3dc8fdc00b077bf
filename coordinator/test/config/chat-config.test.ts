import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { configProblems } from './problems.js';

const SLACK = {
  DROVER_SLACK_CLIENT_ID: '1234.5678',
  DROVER_SLACK_CLIENT_SECRET: 'slack-client-secret',
  DROVER_SLACK_SIGNING_SECRET: '8f742231b10e8888abcd99yyyzzz85a5',
};
const PUBLIC_KEY = '9909435b80c13d340278d68144d77f671c1c1c5b5f37fde48f49b6ce388de00f';
const DISCORD = {
  DROVER_DISCORD_APPLICATION_ID: '1180123456789012345',
  DROVER_DISCORD_PUBLIC_KEY: PUBLIC_KEY.toUpperCase(),
  DROVER_DISCORD_CLIENT_SECRET: 'discord-client-secret',
  DROVER_DISCORD_BOT_TOKEN: 'MTE4.bot.token',
};

const problems = configProblems;

describe('chat settings', () => {
  it('leaves both providers off when none of their settings is set', () => {
    expect(loadConfig({}).chat).toEqual({ slack: null, discord: null });
  });

  it('turns each provider on with its settings and the public API bases by default', () => {
    const { chat } = loadConfig({ ...SLACK, ...DISCORD });
    expect(chat.slack).toEqual({
      clientId: '1234.5678',
      clientSecret: 'slack-client-secret',
      signingSecret: SLACK.DROVER_SLACK_SIGNING_SECRET,
      apiUrl: 'https://slack.com/api/',
      authorizeUrl: 'https://slack.com/oauth/v2/authorize',
    });
    expect(chat.discord).toEqual({
      applicationId: '1180123456789012345',
      publicKey: PUBLIC_KEY,
      clientSecret: 'discord-client-secret',
      botToken: 'MTE4.bot.token',
      apiUrl: 'https://discord.com/api',
      authorizeUrl: 'https://discord.com/oauth2/authorize',
    });
  });

  it('takes the API bases from the environment (a proxy, a test server)', () => {
    const { chat } = loadConfig({
      ...SLACK,
      ...DISCORD,
      DROVER_SLACK_API_URL: 'http://127.0.0.1:9000/slack/api',
      DROVER_DISCORD_API_URL: 'http://127.0.0.1:9001/discord/api/',
    });
    expect(chat.slack?.apiUrl).toBe('http://127.0.0.1:9000/slack/api/');
    expect(chat.discord?.apiUrl).toBe('http://127.0.0.1:9001/discord/api');
  });

  it('names the missing settings of a provider set up halfway, and never echoes a secret', () => {
    expect(problems({ DROVER_SLACK_SIGNING_SECRET: 'abc' })).toEqual([
      'DROVER_SLACK_CLIENT_ID: required when DROVER_SLACK_SIGNING_SECRET is set',
      'DROVER_SLACK_CLIENT_SECRET: required when DROVER_SLACK_SIGNING_SECRET is set',
    ]);
    const found = problems({ ...DISCORD, DROVER_DISCORD_BOT_TOKEN: 'two words' });
    expect(found).toEqual(['DROVER_DISCORD_BOT_TOKEN: expected one word of at most 1024 characters']);
  });

  it('refuses a Discord public key or application id that cannot be right, and a bad API base', () => {
    expect(
      problems({
        ...DISCORD,
        DROVER_DISCORD_PUBLIC_KEY: 'not-hex',
        DROVER_DISCORD_APPLICATION_ID: 'my-app',
      }),
    ).toEqual([
      "DROVER_DISCORD_APPLICATION_ID: expected the application's numeric id, got `my-app`",
      'DROVER_DISCORD_PUBLIC_KEY: expected the application public key as Discord shows it (64 hexadecimal characters)',
    ]);
    expect(problems({ ...DISCORD, DROVER_DISCORD_PUBLIC_KEY: '0'.repeat(64) })).toEqual([
      'DROVER_DISCORD_PUBLIC_KEY: is not an Ed25519 public key (check that it was copied whole)',
    ]);
    expect(problems({ ...SLACK, DROVER_SLACK_API_URL: 'ftp://slack.example' })).toEqual([
      'DROVER_SLACK_API_URL: expected an absolute http(s) URL without credentials, query or fragment, got `ftp://slack.example`',
    ]);
    // A password in the URL is never repeated: the problems go to standard error, the service's journal.
    expect(
      problems({
        ...DISCORD,
        DROVER_DISCORD_API_URL: 'https://proxy:hunter2-discord@discord.example/api',
        DROVER_DISCORD_AUTHORIZE_URL: 'https://proxy:hunter2-authorize@discord.example/oauth2/authorize',
      }),
    ).toEqual([
      'DROVER_DISCORD_API_URL: expected an absolute http(s) URL without credentials, query or fragment, got `https://proxy:****@discord.example/api`',
      'DROVER_DISCORD_AUTHORIZE_URL: expected an absolute http(s) URL without credentials, query or fragment, got `https://proxy:****@discord.example/oauth2/authorize`',
    ]);
  });
});
