import { generateKeyPairSync, sign } from 'node:crypto';
import { WebSocketServer, type WebSocket } from 'ws';
import { FakeProviderServer } from './fake-provider.js';

export const DISCORD_APP_ID = '1180000000000000001';
export const DISCORD_GUILD = { id: '1180000000000000777', name: 'Drover Test Guild' };
export const DISCORD_BOT_TOKEN = 'MTE4MDAw.bot-token.test';
export const DISCORD_CODE = 'discord-oauth-code-ok';
/** A channel id `POST /channels/:id/messages` answers 404 Unknown Channel for. */
export const DISCORD_MISSING_CHANNEL = '1180000000000000404';

/**
 * Discord's REST API (v10) as the coordinator uses it, to Discord's documented protocol
 * (https://discord.com/developers/docs/reference): the OAuth2 code exchange of the bot install
 * flow (its answer names the guild), guild command registration with the bot token. It holds
 * the application's Ed25519 key pair, so tests sign interactions as Discord does.
 */
export class FakeDiscord extends FakeProviderServer {
  readonly keys = generateKeyPairSync('ed25519');
  /** Gateway sessions that identified with the bot token. */
  private readonly sessions = new Set<WebSocket>();
  private gateway: WebSocketServer | null = null;
  private sequence = 0;
  private messageIds = 0;

  constructor() {
    super();
    // The bot install's consent page (DROVER_DISCORD_AUTHORIZE_URL), answering as after "Authorize".
    this.consentPage('/oauth2/authorize', { code: DISCORD_CODE, guild_id: DISCORD_GUILD.id, permissions: '84992' });
    const botOnly = (headers: Record<string, unknown>) => headers.authorization === `Bot ${DISCORD_BOT_TOKEN}`;
    this.route('GET', '/api/v10/gateway/bot', ({ headers }) =>
      botOnly(headers)
        ? {
            body: {
              url: this.url.replace(/^http/, 'ws'),
              shards: 1,
              session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 },
            },
          }
        : { status: 401, body: { message: '401: Unauthorized', code: 0 } },
    );
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
    // https://discord.com/developers/docs/resources/channel#get-channel: a thread (type 11, with
    // its parent) among `threads`, any other id a guild text channel (type 0).
    this.route('GET', '/api/v10/channels/:channel', ({ headers, path }) => {
      if (!botOnly(headers)) return { status: 401, body: { message: '401: Unauthorized', code: 0 } };
      const id = path.split('/')[4] ?? '';
      const parent = this.threads.get(id);
      return {
        body:
          parent === undefined
            ? { id, type: 0, guild_id: DISCORD_GUILD.id, name: 'general' }
            : { id, type: 11, guild_id: DISCORD_GUILD.id, parent_id: parent, name: 'a thread' },
      };
    });
    // https://discord.com/developers/docs/resources/message#create-message: replies to mentions
    // and notifications.
    this.route('POST', '/api/v10/channels/:channel/messages', ({ headers, body, path }) => {
      if (headers.authorization !== `Bot ${DISCORD_BOT_TOKEN}`) {
        return { status: 401, body: { message: '401: Unauthorized', code: 0 } };
      }
      const channelId = path.split('/')[4] ?? '';
      if (channelId === DISCORD_MISSING_CHANNEL)
        return { status: 404, body: { message: 'Unknown Channel', code: 10003 } };
      if (!body?.content && !body?.embeds?.length) {
        return { status: 400, body: { message: 'Cannot send an empty message', code: 50006 } };
      }
      const id = `11800000000009${String(++this.messageIds).padStart(5, '0')}`;
      const message = { id, channel_id: channelId, type: 0, ...body };
      this.posted.push(message);
      return { body: message };
    });
  }

  /** Thread id → the channel it belongs to: what `GET /channels/:id` answers as threads. */
  readonly threads = new Map<string, string>();

  /** The messages `POST /channels/:id/messages` accepted, in order (with `channel_id`). */
  readonly posted: Record<string, any>[] = [];

  /**
   * An interaction's headers as Discord signs them: Ed25519 by the application's key over the
   * timestamp followed by the raw body, hex.
   */
  signedHeaders(body: string, timestampSeconds = Math.floor(Date.now() / 1000)): Record<string, string> {
    const signature = sign(null, Buffer.from(`${timestampSeconds}${body}`), this.keys.privateKey).toString('hex');
    return { 'x-signature-ed25519': signature, 'x-signature-timestamp': String(timestampSeconds) };
  }

  override async start(port = 0): Promise<string> {
    const url = await super.start(port);
    this.gateway = new WebSocketServer({ server: this.server! });
    this.gateway.on('connection', (socket) => this.greet(socket));
    return url;
  }

  override async close(): Promise<void> {
    for (const socket of this.gateway?.clients ?? []) socket.terminate();
    this.gateway?.close();
    this.gateway = null;
    await super.close();
  }

  /** Whether a Gateway session is identified (the coordinator is listening for mentions). */
  gatewayReady(): boolean {
    return this.sessions.size > 0;
  }

  /** Delivers a MESSAGE_CREATE to every identified Gateway session, as Discord does. */
  dispatchMessage(message: object): void {
    this.dispatch('MESSAGE_CREATE', message);
  }

  /**
   * Discord's Gateway (https://discord.com/developers/docs/events/gateway): HELLO with the
   * heartbeat interval, IDENTIFY with the bot token answered by READY (the bot user is the
   * application), heartbeats acknowledged; a wrong token is closed with 4004.
   */
  private greet(socket: WebSocket): void {
    socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: 41_250 }, s: null, t: null }));
    socket.on('message', (raw) => {
      const payload = JSON.parse(String(raw)) as { op: number; d: any };
      if (payload.op === 1) socket.send(JSON.stringify({ op: 11, d: null, s: null, t: null }));
      if (payload.op === 2) {
        if (payload.d?.token !== DISCORD_BOT_TOKEN) {
          socket.close(4004, 'Authentication failed.');
          return;
        }
        this.sessions.add(socket);
        socket.on('close', () => this.sessions.delete(socket));
        this.send(socket, 'READY', {
          v: 10,
          user: {
            id: DISCORD_APP_ID,
            username: 'drover',
            discriminator: '0',
            global_name: null,
            bot: true,
            avatar: null,
          },
          guilds: [],
          session_id: 'fake-session',
          resume_gateway_url: this.url.replace(/^http/, 'ws'),
          shard: [0, 1],
          application: { id: DISCORD_APP_ID, flags: 0 },
        });
      }
    });
  }

  private dispatch(event: string, data: object): void {
    for (const socket of this.sessions) this.send(socket, event, data);
  }

  private send(socket: WebSocket, event: string, data: object): void {
    socket.send(JSON.stringify({ op: 0, t: event, s: ++this.sequence, d: data }));
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
