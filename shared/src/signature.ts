import { createHash, randomBytes, type KeyObject } from 'node:crypto';
import { signBytes, verifyBytes } from './ed25519.js';
import { AgentHeader, NONCE_PATTERN, SIGNATURE_SCHEME, SIGNATURE_TOLERANCE_MS } from './headers.js';
import { UUID_REGEX } from './uuid.js';

/**
 * The agent request signature (docs/agent-protocol.md, "Signed requests"). The signed content is these lines joined by
 * "\n": the scheme, the method in capitals, the path with its query string as sent, the
 * X-Timestamp value, the X-Nonce value and the lowercase hex SHA-256 of the raw body bytes.
 * Both the agent (signer) and the coordinator (verifier) use this module.
 */

export interface SignedRequestParts {
  method: string;
  /** Path with query string exactly as sent, starting with `/v1/`. */
  path: string;
  timestamp: string;
  nonce: string;
  body?: Uint8Array | string | undefined;
}

const EMPTY_BODY_SHA256 = sha256Hex('');

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

export function canonicalRequest(parts: SignedRequestParts): string {
  const bodyHash = parts.body === undefined || parts.body.length === 0 ? EMPTY_BODY_SHA256 : sha256Hex(parts.body);
  return [SIGNATURE_SCHEME, parts.method.toUpperCase(), parts.path, parts.timestamp, parts.nonce, bodyHash].join('\n');
}

export function newNonce(): string {
  return randomBytes(18).toString('base64url');
}

export interface SignRequestInput {
  agentId: string;
  privateKey: KeyObject;
  method: string;
  path: string;
  body?: Uint8Array | string | undefined;
  /** Unix milliseconds; defaults to now. */
  now?: number;
  nonce?: string;
}

/** Returns the four headers that authenticate one agent request. */
export function signRequest(input: SignRequestInput): Record<AgentHeader, string> {
  if (!input.path.startsWith('/v1/')) throw new Error(`The signed path must start with /v1/, got ${input.path}`);
  const timestamp = String(input.now ?? Date.now());
  const nonce = input.nonce ?? newNonce();
  const message = canonicalRequest({ method: input.method, path: input.path, timestamp, nonce, body: input.body });
  return {
    [AgentHeader.agentId]: input.agentId,
    [AgentHeader.timestamp]: timestamp,
    [AgentHeader.nonce]: nonce,
    [AgentHeader.signature]: signBytes(input.privateKey, Buffer.from(message, 'utf8')),
  };
}

export type SignatureHeaders = Readonly<Record<string, string | string[] | undefined>>;

export interface ParsedSignatureHeaders {
  agentId: string;
  timestamp: string;
  timestampMs: number;
  nonce: string;
  signature: string;
}

export type SignatureFailure =
  | 'missing_headers'
  | 'duplicate_headers'
  | 'malformed_agent_id'
  | 'malformed_timestamp'
  | 'stale_timestamp'
  | 'malformed_nonce'
  | 'malformed_signature'
  | 'bad_signature';

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: SignatureFailure };

/** The agent id is the UUID the coordinator gave at enrollment. */
export const AGENT_ID_PATTERN = UUID_REGEX;
/** Unix milliseconds: digits only, at most 16 of them (exact as a JS number). */
const TIMESTAMP_PATTERN = /^\d{1,16}$/;
/** Standard base64 of the 64-byte signature: 86 characters and `==`. */
const SIGNATURE_PATTERN = /^[A-Za-z0-9+/]{86}==$/;

/**
 * True when `timestampMs` is within the tolerance of `nowMs`. The window is inclusive: a
 * timestamp exactly {@link SIGNATURE_TOLERANCE_MS} away is accepted, one millisecond more is not
 * (a timestamp "more than 300 s off" is refused).
 */
export function isTimestampFresh(timestampMs: number, nowMs: number): boolean {
  return Math.abs(nowMs - timestampMs) <= SIGNATURE_TOLERANCE_MS;
}

/**
 * Checks the header formats and the timestamp window, in this order: presence (a header sent
 * twice, which some stacks hand over as an array, counts as a failure of its own), agent id,
 * timestamp format, timestamp window, nonce, signature format. The caller then looks the agent
 * up, calls {@link verifyParsedSignature} and only then records the nonce in its replay store.
 */
export function parseSignatureHeaders(headers: SignatureHeaders, now = Date.now()): Parsed<ParsedSignatureHeaders> {
  const values = [AgentHeader.agentId, AgentHeader.timestamp, AgentHeader.nonce, AgentHeader.signature].map(
    (name) => headers[name],
  );
  if (values.some((v) => v === undefined || v === '' || (Array.isArray(v) && v.length === 0))) {
    return { ok: false, reason: 'missing_headers' };
  }
  if (values.some((v) => Array.isArray(v))) return { ok: false, reason: 'duplicate_headers' };
  const [agentId, timestamp, nonce, signature] = values as [string, string, string, string];
  if (!AGENT_ID_PATTERN.test(agentId)) return { ok: false, reason: 'malformed_agent_id' };
  if (!TIMESTAMP_PATTERN.test(timestamp)) return { ok: false, reason: 'malformed_timestamp' };
  const timestampMs = Number(timestamp);
  if (!isTimestampFresh(timestampMs, now)) return { ok: false, reason: 'stale_timestamp' };
  if (!NONCE_PATTERN.test(nonce)) return { ok: false, reason: 'malformed_nonce' };
  if (!SIGNATURE_PATTERN.test(signature)) return { ok: false, reason: 'malformed_signature' };
  return { ok: true, value: { agentId: agentId.toLowerCase(), timestamp, timestampMs, nonce, signature } };
}

export function verifyParsedSignature(
  publicKey: KeyObject,
  parsed: ParsedSignatureHeaders,
  request: { method: string; path: string; body?: Uint8Array | string | undefined },
): boolean {
  const message = canonicalRequest({ ...request, timestamp: parsed.timestamp, nonce: parsed.nonce });
  return verifyBytes(publicKey, Buffer.from(message, 'utf8'), parsed.signature);
}
