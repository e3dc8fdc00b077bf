import { createHash, randomBytes, type KeyObject } from 'node:crypto';
import { signBytes, verifyBytes } from './ed25519.js';
import { AgentHeader, NONCE_PATTERN, SIGNATURE_SCHEME, SIGNATURE_TOLERANCE_MS } from './headers.js';

/**
 * The agent request signature of CONTRACT §5. The signed content is these lines joined by
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
  const bodyHash =
    parts.body === undefined || parts.body.length === 0 ? EMPTY_BODY_SHA256 : sha256Hex(parts.body);
  return [SIGNATURE_SCHEME, parts.method.toUpperCase(), parts.path, parts.timestamp, parts.nonce, bodyHash].join(
    '\n',
  );
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
  | 'malformed_timestamp'
  | 'stale_timestamp'
  | 'malformed_nonce'
  | 'bad_signature';

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: SignatureFailure };

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? undefined : value;
}

/**
 * Checks the header formats and the timestamp window. The caller then looks the agent up,
 * checks the nonce against its replay cache and calls {@link verifyParsedSignature}.
 */
export function parseSignatureHeaders(headers: SignatureHeaders, now = Date.now()): Parsed<ParsedSignatureHeaders> {
  const agentId = single(headers[AgentHeader.agentId]);
  const timestamp = single(headers[AgentHeader.timestamp]);
  const nonce = single(headers[AgentHeader.nonce]);
  const signature = single(headers[AgentHeader.signature]);
  if (!agentId || !timestamp || !nonce || !signature) return { ok: false, reason: 'missing_headers' };
  if (!/^\d{1,16}$/.test(timestamp)) return { ok: false, reason: 'malformed_timestamp' };
  const timestampMs = Number(timestamp);
  if (Math.abs(now - timestampMs) > SIGNATURE_TOLERANCE_MS) return { ok: false, reason: 'stale_timestamp' };
  if (!NONCE_PATTERN.test(nonce)) return { ok: false, reason: 'malformed_nonce' };
  return { ok: true, value: { agentId, timestamp, timestampMs, nonce, signature } };
}

export function verifyParsedSignature(
  publicKey: KeyObject,
  parsed: ParsedSignatureHeaders,
  request: { method: string; path: string; body?: Uint8Array | string | undefined },
): boolean {
  const message = canonicalRequest({ ...request, timestamp: parsed.timestamp, nonce: parsed.nonce });
  return verifyBytes(publicKey, Buffer.from(message, 'utf8'), parsed.signature);
}
