import { isValidEd25519PublicKey } from '@drover/shared';
import { shownUrl } from './database-config.js';
/**
 * The team-chat providers' app credentials (docs/chat.md, "Settings"). A provider is configured
 * when all of its required settings are set; a provider with none of them set is off (its
 * endpoints answer 404), and one with only some of them is a configuration error naming the
 * missing ones, so that a typo does not silently turn chat off.
 */
export interface SlackConfig {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly signingSecret: string;
  /** Slack's Web API base, ending in `/` (`https://slack.com/api/`). */
  readonly apiUrl: string;
  /** Where people authorize the app (`https://slack.com/oauth/v2/authorize`). */
  readonly authorizeUrl: string;
}

export interface DiscordConfig {
  readonly applicationId: string;
  /** The application's Ed25519 public key, 32 bytes as 64 hexadecimal characters. */
  readonly publicKey: string;
  readonly clientSecret: string;
  readonly botToken: string;
  /** Discord's REST API base without the version and trailing slash (`https://discord.com/api`; v10 is used). */
  readonly apiUrl: string;
  /** Where people authorize the app (`https://discord.com/oauth2/authorize`). */
  readonly authorizeUrl: string;
}

export interface ChatConfig {
  readonly slack: SlackConfig | null;
  readonly discord: DiscordConfig | null;
}

export const SLACK_DEFAULTS = Object.freeze({
  apiUrl: 'https://slack.com/api/',
  authorizeUrl: 'https://slack.com/oauth/v2/authorize',
});
export const DISCORD_DEFAULTS = Object.freeze({
  apiUrl: 'https://discord.com/api',
  authorizeUrl: 'https://discord.com/oauth2/authorize',
});

type Env = Record<string, string | undefined>;

const HEX_KEY = /^[0-9a-f]{64}$/i;
const DISCORD_SNOWFLAKE = /^\d{15,25}$/;
const MAX_SETTING_LENGTH = 1024;

export function parseChatConfig(env: Env, problems: string[]): ChatConfig {
  return { slack: parseSlack(env, problems), discord: parseDiscord(env, problems) };
}

function parseSlack(env: Env, problems: string[]): SlackConfig | null {
  const values = required(env, problems, {
    clientId: 'DROVER_SLACK_CLIENT_ID',
    clientSecret: 'DROVER_SLACK_CLIENT_SECRET',
    signingSecret: 'DROVER_SLACK_SIGNING_SECRET',
  });
  const apiUrl = url(env, problems, 'DROVER_SLACK_API_URL', SLACK_DEFAULTS.apiUrl, '/');
  const authorizeUrl = url(env, problems, 'DROVER_SLACK_AUTHORIZE_URL', SLACK_DEFAULTS.authorizeUrl, '');
  if (!values) return null;
  return Object.freeze({ ...values, apiUrl, authorizeUrl });
}

function parseDiscord(env: Env, problems: string[]): DiscordConfig | null {
  const values = required(env, problems, {
    applicationId: 'DROVER_DISCORD_APPLICATION_ID',
    publicKey: 'DROVER_DISCORD_PUBLIC_KEY',
    clientSecret: 'DROVER_DISCORD_CLIENT_SECRET',
    botToken: 'DROVER_DISCORD_BOT_TOKEN',
  });
  const apiUrl = url(env, problems, 'DROVER_DISCORD_API_URL', DISCORD_DEFAULTS.apiUrl, '');
  const authorizeUrl = url(env, problems, 'DROVER_DISCORD_AUTHORIZE_URL', DISCORD_DEFAULTS.authorizeUrl, '');
  if (!values) return null;
  const { applicationId, publicKey, clientSecret, botToken } = values;
  const before = problems.length;
  if (!DISCORD_SNOWFLAKE.test(applicationId)) {
    problems.push(`DROVER_DISCORD_APPLICATION_ID: expected the application's numeric id, got \`${applicationId}\``);
  }
  if (!HEX_KEY.test(publicKey)) {
    problems.push(
      'DROVER_DISCORD_PUBLIC_KEY: expected the application public key as Discord shows it (64 hexadecimal characters)',
    );
  } else if (!isValidEd25519PublicKey(Buffer.from(publicKey, 'hex'))) {
    problems.push('DROVER_DISCORD_PUBLIC_KEY: is not an Ed25519 public key (check that it was copied whole)');
  }
  if (problems.length > before) return null;
  return Object.freeze({
    applicationId,
    publicKey: publicKey.toLowerCase(),
    clientSecret,
    botToken,
    apiUrl,
    authorizeUrl,
  });
}

/** Every setting of `names` (field → variable), or null when none is set; a problem per missing one when only some are. */
function required<K extends string>(env: Env, problems: string[], names: Record<K, string>): Record<K, string> | null {
  const entries = (Object.entries(names) as [K, string][]).map(([key, name]) => ({
    key,
    name,
    value: env[name]?.trim() ?? '',
  }));
  const set = entries.filter((e) => e.value !== '');
  if (set.length === 0) return null;
  const before = problems.length;
  for (const { name, value } of entries) {
    if (value === '') {
      const others = set.map((e) => e.name).join(', ');
      problems.push(`${name}: required when ${others} ${set.length === 1 ? 'is' : 'are'} set`);
    } else if (value.length > MAX_SETTING_LENGTH || /\s/.test(value)) {
      // Secrets are never echoed.
      problems.push(`${name}: expected one word of at most ${MAX_SETTING_LENGTH} characters`);
    }
  }
  if (problems.length > before) return null;
  return Object.fromEntries(entries.map((e) => [e.key, e.value])) as Record<K, string>;
}

/** An http(s) URL setting without credentials, query or fragment, normalised to end in `ending`. */
function url(env: Env, problems: string[], name: string, fallback: string, ending: '/' | ''): string {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    problems.push(`${name}: expected an absolute http(s) URL, got \`${raw}\``);
    return fallback;
  }
  if (
    (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') ||
    parsed.username ||
    parsed.password ||
    parsed.search ||
    parsed.hash
  ) {
    problems.push(
      `${name}: expected an absolute http(s) URL without credentials, query or fragment, got \`${shownUrl(raw)}\``,
    );
    return fallback;
  }
  return parsed.toString().replace(/\/+$/, '') + ending;
}
