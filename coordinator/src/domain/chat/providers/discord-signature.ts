import { publicKeyFromBase64, verifyBytes } from '@drover/shared';
import type { KeyObject } from 'node:crypto';

/** How far an interaction's timestamp may be from now: the same replay window as Slack's. */
export const DISCORD_TIMESTAMP_WINDOW_SECONDS = 5 * 60;

/** The application's public key (hex, as the developer portal shows it) as a key object. */
export function discordPublicKey(hex: string): KeyObject {
  const key = publicKeyFromBase64(Buffer.from(hex, 'hex').toString('base64'));
  if (!key) throw new Error('DROVER_DISCORD_PUBLIC_KEY is not an Ed25519 public key');
  return key;
}

/**
 * Whether an interaction really comes from Discord
 * (https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers):
 * `X-Signature-Ed25519` is the hex Ed25519 signature, by the application's key, of
 * `X-Signature-Timestamp` followed by the raw body; the timestamp must also be within five
 * minutes of now. Answers why not, or null when it does.
 */
export function discordSignatureProblem(
  publicKey: KeyObject,
  headers: { timestamp: string | undefined; signature: string | undefined },
  rawBody: Buffer,
  nowMs: number,
): string | null {
  const { timestamp, signature } = headers;
  if (!timestamp || !signature) return 'X-Signature-Ed25519 and X-Signature-Timestamp are required';
  if (!/^\d{1,12}$/.test(timestamp)) return 'X-Signature-Timestamp is not a Unix time';
  if (!/^[0-9a-f]{128}$/i.test(signature)) return 'X-Signature-Ed25519 is not 64 bytes of hexadecimal';
  const message = Buffer.concat([Buffer.from(timestamp), rawBody]);
  if (!verifyBytes(publicKey, message, Buffer.from(signature, 'hex').toString('base64'))) {
    return 'X-Signature-Ed25519 does not match';
  }
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > DISCORD_TIMESTAMP_WINDOW_SECONDS) {
    return 'X-Signature-Timestamp is more than five minutes away from now';
  }
  return null;
}
