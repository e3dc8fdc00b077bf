import { generateKeyPairSync, sign } from 'node:crypto';
import { FakeProviderServer } from './fake-provider.js';

export const DISCORD_APP_ID = '1180000000000000001';
export const DISCORD_GUILD = { id: '1180000000000000777', name: 'Drover Test Guild' };
export const DISCORD_BOT_TOKEN = 'MTE4MDAw.bot-token.test';
export const DISCORD_CODE = 'discord-oauth-code-ok';

/**
 * Discord's REST API (v10) as the coordinator uses it, to Discord's documented protocol
 * (https://discord.com/developers/docs/reference): the OAuth2 code exchange of the bot install
 * flow (its answer names the guild), guild command registration with the bot token. It holds
 * the application's Ed25519 key pair, so tests sign interactions as Discord does.
 */
export class FakeDiscord extends FakeProviderServer {
  readonly keys = generateKeyPairSync('ed25519');

  constructor() {
    super();
    this.route('POST', '/api/v10/oauth2/token', ({ body }) => {
      if (body?.client_id !== DISCORD_APP_ID || body?.client_secret !== 'discord-client-secret') {
        return { status: 401, body: { error: 'invalid_client' } };
      }
      if (body?.grant_type !== 'authorization_code' || body?.code !== DISCORD_CODE) {
        return { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid "code" in request.' } };
      }
      return {
        body: {
          access_token: 'user-access-token',
          token_type: 'Bearer',
          expires_in: 604800,
          refresh_token: 'refresh',
          scope: 'bot applications.commands',
          guild: { ...DISCORD_GUILD, owner_id: '1180000000000000999' },
        },
      };
    });
    this.route('PUT', '/api/v10/applications/:app/guilds/:guild/commands', ({ headers, body }) => {
      if (headers.authorization !== `Bot ${DISCORD_BOT_TOKEN}`) {
        return { status: 401, body: { message: '401: Unauthorized', code: 0 } };
      }
      return { body: (body as object[]).map((c, i) => ({ id: `11800000000000100${i}`, ...c })) };
    });
  }

  /**
   * An interaction's headers as Discord signs them: Ed25519 by the application's key over the
   * timestamp followed by the raw body, hex.
   */
  signedHeaders(body: string, timestampSeconds = Math.floor(Date.now() / 1000)): Record<string, string> {
    const signature = sign(null, Buffer.from(`${timestampSeconds}${body}`), this.keys.privateKey).toString('hex');
    return { 'x-signature-ed25519': signature, 'x-signature-timestamp': String(timestampSeconds) };
  }

  /** The application's public key as the developer portal shows it: 64 hexadecimal characters. */
  publicKeyHex(): string {
    const der = this.keys.publicKey.export({ format: 'der', type: 'spki' });
    return der.subarray(der.length - 32).toString('hex');
  }
}

/** The coordinator's Discord settings pointing at `fake`. */
export function discordEnv(fake: FakeDiscord): Record<string, string> {
  return {
    DROVER_DISCORD_APPLICATION_ID: DISCORD_APP_ID,
    DROVER_DISCORD_PUBLIC_KEY: fake.publicKeyHex(),
    DROVER_DISCORD_CLIENT_SECRET: 'discord-client-secret',
    DROVER_DISCORD_BOT_TOKEN: DISCORD_BOT_TOKEN,
    DROVER_DISCORD_API_URL: `${fake.url}/api`,
    DROVER_DISCORD_AUTHORIZE_URL: `${fake.url}/oauth2/authorize`,
  };
}
