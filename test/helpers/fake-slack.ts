import { createHmac } from 'node:crypto';
import { FakeProviderServer } from './fake-provider.js';

export const SLACK_TEAM = { id: 'T0DROVER1', name: 'Drover Test Workspace' };
export const SLACK_BOT_USER = 'U0DROVERBOT';
export const SLACK_BOT_TOKEN = 'xoxb-test-bot-token-1234567890';
export const SLACK_CODE = 'slack-oauth-code-ok';
/** A channel id `chat.postMessage` answers `channel_not_found` for. */
export const SLACK_MISSING_CHANNEL = 'C0MISSING';

/** The coordinator's Slack settings pointing at `fake`. */
export function slackEnv(fake: FakeSlack): Record<string, string> {
  return {
    DROVER_SLACK_CLIENT_ID: '1111.2222',
    DROVER_SLACK_CLIENT_SECRET: 'slack-client-secret',
    DROVER_SLACK_SIGNING_SECRET: 'slack-signing-secret-0123456789abcdef',
    DROVER_SLACK_API_URL: `${fake.url}/api/`,
    DROVER_SLACK_AUTHORIZE_URL: `${fake.url}/oauth/v2/authorize`,
  };
}

/**
 * Slack's Web API as the coordinator uses it, to Slack's documented protocol
 * (https://api.slack.com/methods): form-encoded POSTs answered `{ok: true, ...}` or
 * `{ok: false, error}` with HTTP 200. `oauth.v2.access` exchanges SLACK_CODE for a bot token of
 * SLACK_TEAM; any other code is `invalid_code`.
 */
export class FakeSlack extends FakeProviderServer {
  constructor() {
    super();
    // The consent page a browser is sent to (DROVER_SLACK_AUTHORIZE_URL), answering as after "Allow".
    this.consentPage('/oauth/v2/authorize', { code: SLACK_CODE });
    this.route('POST', '/api/oauth.v2.access', ({ body }) => {
      if (body?.client_id !== '1111.2222' || body?.client_secret !== 'slack-client-secret') {
        return { body: { ok: false, error: 'invalid_client_id' } };
      }
      if (body?.code !== SLACK_CODE) return { body: { ok: false, error: 'invalid_code' } };
      return {
        body: {
          ok: true,
          app_id: 'A0DROVER',
          authed_user: { id: 'U0OWNER' },
          scope: 'app_mentions:read,chat:write,chat:write.public,commands',
          token_type: 'bot',
          access_token: SLACK_BOT_TOKEN,
          bot_user_id: SLACK_BOT_USER,
          team: SLACK_TEAM,
          enterprise: null,
          is_enterprise_install: false,
        },
      };
    });
    const withBotToken = (headers: Record<string, unknown>, answer: () => object) =>
      headers.authorization === `Bearer ${SLACK_BOT_TOKEN}`
        ? { body: answer() }
        : { body: { ok: false, error: 'invalid_auth' } };
    this.route('POST', '/api/chat.postEphemeral', ({ headers }) =>
      withBotToken(headers, () => ({ ok: true, message_ts: `${Date.now() / 1000}` })),
    );
    // https://api.slack.com/methods/chat.postMessage: the bot token as a bearer token (the Web API
    // client sends it in the Authorization header); blocks arrive JSON-encoded in the form.
    this.route('POST', '/api/chat.postMessage', ({ headers, body }) => {
      if (headers.authorization !== `Bearer ${SLACK_BOT_TOKEN}`) return { body: { ok: false, error: 'invalid_auth' } };
      if (!body?.channel) return { body: { ok: false, error: 'channel_not_found' } };
      if (body.channel === SLACK_MISSING_CHANNEL) return { body: { ok: false, error: 'channel_not_found' } };
      if (!body.text && !body.blocks) return { body: { ok: false, error: 'no_text' } };
      this.posted.push({ ...body, blocks: typeof body.blocks === 'string' ? JSON.parse(body.blocks) : body.blocks });
      return { body: { ok: true, channel: body.channel, ts: `${1700000000 + this.posted.length}.000100` } };
    });
  }

  /** The messages `chat.postMessage` accepted, in order (blocks parsed). */
  readonly posted: Record<string, any>[] = [];
}

/**
 * A request as Slack signs it (https://api.slack.com/authentication/verifying-requests-from-slack):
 * `v0=` HMAC-SHA256 of `v0:<timestamp>:<body>` with the signing secret of slackEnv.
 */
export function slackSignedHeaders(
  body: string,
  timestampSeconds = Math.floor(Date.now() / 1000),
  secret = 'slack-signing-secret-0123456789abcdef',
): Record<string, string> {
  const signature = createHmac('sha256', secret).update(`v0:${timestampSeconds}:${body}`).digest('hex');
  return { 'x-slack-request-timestamp': String(timestampSeconds), 'x-slack-signature': `v0=${signature}` };
}
