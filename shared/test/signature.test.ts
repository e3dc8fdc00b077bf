import { createHash } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import {
  AgentHeader,
  canonicalRequest,
  generateEd25519KeyPair,
  isTimestampFresh,
  newNonce,
  NONCE_PATTERN,
  parseSignatureHeaders,
  privateKeyFromBase64,
  publicKeyFromBase64,
  SIGNATURE_TOLERANCE_MS,
  signRequest,
  verifyParsedSignature,
  type ParsedSignatureHeaders,
} from '../src/index.js';

ed.hashes.sha512 = sha512;

const AGENT_ID = '6f1c2b8e-4d3a-4f5b-9c7d-0e1f2a3b4c5d';
const NOW = 1_760_000_000_000;
const NONCE = 'abcdefghijklmnop_-12';
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** The canonical string built by hand, independently of the module under test. */
function expectedCanonical(method: string, path: string, timestamp: string, nonce: string, body: string): string {
  const hash = createHash('sha256').update(Buffer.from(body, 'utf8')).digest('hex');
  return `DROVER-ED25519-V1\n${method}\n${path}\n${timestamp}\n${nonce}\n${hash}`;
}

function headersFor(keys = generateEd25519KeyPair(), overrides: Partial<Parameters<typeof signRequest>[0]> = {}) {
  return signRequest({
    agentId: AGENT_ID,
    privateKey: privateKeyFromBase64(keys.privateKey),
    method: 'PUT',
    path: '/v1/agent/workflows?x=1&y=%20',
    body: '{"workflows":[]}',
    now: NOW,
    nonce: NONCE,
    ...overrides,
  });
}

function parse(headers: Record<string, string | string[] | undefined>, now = NOW): ParsedSignatureHeaders {
  const parsed = parseSignatureHeaders(headers, now);
  if (!parsed.ok) throw new Error(`expected the headers to parse, got ${parsed.reason}`);
  return parsed.value;
}

describe('canonical request string', () => {
  it('is the six lines of CONTRACT §5 joined by \\n, without a trailing newline', () => {
    const text = canonicalRequest({
      method: 'put',
      path: '/v1/agent/workflows?b=2&a=1',
      timestamp: '1760000000000',
      nonce: NONCE,
      body: '{"workflows":[]}',
    });
    expect(text).toBe(
      [
        'DROVER-ED25519-V1',
        'PUT',
        '/v1/agent/workflows?b=2&a=1',
        '1760000000000',
        NONCE,
        createHash('sha256').update('{"workflows":[]}').digest('hex'),
      ].join('\n'),
    );
    expect(text.endsWith('\n')).toBe(false);
  });

  it('hashes the empty string when there is no body or an empty one', () => {
    for (const body of [undefined, '', new Uint8Array()]) {
      const text = canonicalRequest({ method: 'GET', path: '/v1/agent/me', timestamp: '1', nonce: NONCE, body });
      expect(text.split('\n')[5]).toBe(EMPTY_SHA256);
    }
  });

  it('hashes the raw bytes, so equal JSON with different spacing signs differently', () => {
    const a = canonicalRequest({ method: 'PUT', path: '/v1/x', timestamp: '1', nonce: NONCE, body: '{"a":1}' });
    const b = canonicalRequest({ method: 'PUT', path: '/v1/x', timestamp: '1', nonce: NONCE, body: '{ "a": 1 }' });
    expect(a).not.toBe(b);
    const bytes = Buffer.from('{"name":"caf\u00e9"}', 'utf8');
    expect(canonicalRequest({ method: 'PUT', path: '/v1/x', timestamp: '1', nonce: NONCE, body: bytes })).toBe(
      canonicalRequest({ method: 'PUT', path: '/v1/x', timestamp: '1', nonce: NONCE, body: '{"name":"caf\u00e9"}' }),
    );
  });

  it('keeps the path and query exactly as given: no decoding, sorting or trailing-slash changes', () => {
    const path = '/v1/agent/x/?b=%2F&a=1&a=2';
    expect(canonicalRequest({ method: 'GET', path, timestamp: '1', nonce: NONCE }).split('\n')[2]).toBe(path);
  });
});

describe('signing and verifying a request', () => {
  it('signs the canonical string with the agent key, verifiable by an independent implementation', () => {
    const keys = generateEd25519KeyPair();
    const headers = headersFor(keys);
    expect(headers).toEqual({
      [AgentHeader.agentId]: AGENT_ID,
      [AgentHeader.timestamp]: String(NOW),
      [AgentHeader.nonce]: NONCE,
      [AgentHeader.signature]: expect.stringMatching(/^[A-Za-z0-9+/]{86}==$/),
    });
    const message = new TextEncoder().encode(
      expectedCanonical('PUT', '/v1/agent/workflows?x=1&y=%20', String(NOW), NONCE, '{"workflows":[]}'),
    );
    const signature = Buffer.from(headers[AgentHeader.signature], 'base64');
    expect(ed.verify(signature, message, Buffer.from(keys.publicKey, 'base64'))).toBe(true);
  });

  it('verifies a request signed by an independent implementation', () => {
    const { secretKey, publicKey } = ed.keygen();
    const body = '{"workflows":[{"name":"deploy"}]}';
    const message = expectedCanonical('PUT', '/v1/agent/workflows', String(NOW), NONCE, body);
    const headers = {
      [AgentHeader.agentId]: AGENT_ID,
      [AgentHeader.timestamp]: String(NOW),
      [AgentHeader.nonce]: NONCE,
      [AgentHeader.signature]: Buffer.from(ed.sign(new TextEncoder().encode(message), secretKey)).toString('base64'),
    };
    const key = publicKeyFromBase64(Buffer.from(publicKey).toString('base64'))!;
    const parsed = parse(headers);
    expect(verifyParsedSignature(key, parsed, { method: 'PUT', path: '/v1/agent/workflows', body })).toBe(true);
    expect(verifyParsedSignature(key, parsed, { method: 'put', path: '/v1/agent/workflows', body })).toBe(true);
    expect(verifyParsedSignature(key, parsed, { method: 'POST', path: '/v1/agent/workflows', body })).toBe(false);
    expect(verifyParsedSignature(key, parsed, { method: 'PUT', path: '/v1/agent/workflows?', body })).toBe(false);
    expect(verifyParsedSignature(key, parsed, { method: 'PUT', path: '/v1/agent/workflows', body: `${body} ` })).toBe(
      false,
    );
    expect(verifyParsedSignature(key, parsed, { method: 'PUT', path: '/v1/agent/workflows' })).toBe(false);
  });

  it('refuses a signature when any signed header was changed', () => {
    const keys = generateEd25519KeyPair();
    const key = publicKeyFromBase64(keys.publicKey)!;
    const headers = headersFor(keys);
    const request = { method: 'PUT', path: '/v1/agent/workflows?x=1&y=%20', body: '{"workflows":[]}' };
    expect(verifyParsedSignature(key, parse(headers), request)).toBe(true);
    expect(verifyParsedSignature(key, parse({ ...headers, [AgentHeader.timestamp]: String(NOW + 1) }), request)).toBe(
      false,
    );
    expect(verifyParsedSignature(key, parse({ ...headers, [AgentHeader.nonce]: `${NONCE}x` }), request)).toBe(false);
    const otherKey = publicKeyFromBase64(generateEd25519KeyPair().publicKey)!;
    expect(verifyParsedSignature(otherKey, parse(headers), request)).toBe(false);
  });

  it('refuses to sign a path that does not start with /v1/', () => {
    expect(() => headersFor(undefined, { path: '/agent/me' })).toThrow(/\/v1\//);
    expect(() => headersFor(undefined, { path: 'http://x/v1/agent/me' })).toThrow(/\/v1\//);
  });

  it('uses the current time and a fresh valid nonce by default', () => {
    const keys = generateEd25519KeyPair();
    const before = Date.now();
    const a = signRequest({
      agentId: AGENT_ID,
      privateKey: privateKeyFromBase64(keys.privateKey),
      method: 'GET',
      path: '/v1/agent/me',
    });
    const b = signRequest({
      agentId: AGENT_ID,
      privateKey: privateKeyFromBase64(keys.privateKey),
      method: 'GET',
      path: '/v1/agent/me',
    });
    expect(Number(a[AgentHeader.timestamp])).toBeGreaterThanOrEqual(before);
    expect(Number(a[AgentHeader.timestamp])).toBeLessThanOrEqual(Date.now());
    expect(a[AgentHeader.nonce]).toMatch(NONCE_PATTERN);
    expect(a[AgentHeader.nonce]).not.toBe(b[AgentHeader.nonce]);
  });
});

describe('timestamp window', () => {
  it('accepts a timestamp exactly 300 s off either way and refuses one more millisecond', () => {
    expect(SIGNATURE_TOLERANCE_MS).toBe(300_000);
    expect(isTimestampFresh(NOW - 300_000, NOW)).toBe(true);
    expect(isTimestampFresh(NOW + 300_000, NOW)).toBe(true);
    expect(isTimestampFresh(NOW - 300_001, NOW)).toBe(false);
    expect(isTimestampFresh(NOW + 300_001, NOW)).toBe(false);
  });

  it('applies the window when parsing headers', () => {
    const headers = headersFor();
    expect(parseSignatureHeaders(headers, NOW + 300_000).ok).toBe(true);
    expect(parseSignatureHeaders(headers, NOW - 300_000).ok).toBe(true);
    expect(parseSignatureHeaders(headers, NOW + 300_001)).toEqual({ ok: false, reason: 'stale_timestamp' });
    expect(parseSignatureHeaders(headers, NOW - 300_001)).toEqual({ ok: false, reason: 'stale_timestamp' });
  });

  it('refuses timestamps that are not plain Unix milliseconds', () => {
    for (const bad of [
      '1760000000.000',
      '-1760000000000',
      '1.76e12',
      ' 1760000000000',
      '0x1',
      '12345678901234567',
      'now',
    ]) {
      expect(parseSignatureHeaders({ ...headersFor(), [AgentHeader.timestamp]: bad }, NOW), bad).toEqual({
        ok: false,
        reason: 'malformed_timestamp',
      });
    }
  });
});

describe('nonce format', () => {
  it('accepts 16 to 64 characters of [A-Za-z0-9_-]', () => {
    for (const good of ['a'.repeat(16), 'Z'.repeat(64), 'abcDEF0123456789-_', newNonce()]) {
      expect(NONCE_PATTERN.test(good), good).toBe(true);
      expect(parseSignatureHeaders({ ...headersFor(), [AgentHeader.nonce]: good }, NOW).ok).toBe(true);
    }
  });

  it('refuses shorter, longer or other characters', () => {
    for (const bad of [
      'a'.repeat(15),
      'a'.repeat(65),
      'abcdefghijklmno=',
      'abcdefghijklmno+',
      'abcdefghijklmnop\n',
      'abcdefghijk lmnop',
      'é'.repeat(16),
    ]) {
      expect(NONCE_PATTERN.test(bad), bad).toBe(false);
      expect(parseSignatureHeaders({ ...headersFor(), [AgentHeader.nonce]: bad }, NOW)).toEqual({
        ok: false,
        reason: 'malformed_nonce',
      });
    }
  });
});

describe('signature header parsing', () => {
  it('reads the four headers', () => {
    expect(parse(headersFor())).toMatchObject({
      agentId: AGENT_ID,
      timestamp: String(NOW),
      timestampMs: NOW,
      nonce: NONCE,
    });
  });

  it('reports any missing or empty header as missing', () => {
    for (const name of Object.values(AgentHeader)) {
      const headers: Record<string, string | string[] | undefined> = { ...headersFor() };
      delete headers[name];
      expect(parseSignatureHeaders(headers, NOW), name).toEqual({ ok: false, reason: 'missing_headers' });
      expect(parseSignatureHeaders({ ...headers, [name]: '' }, NOW), name).toEqual({
        ok: false,
        reason: 'missing_headers',
      });
      expect(parseSignatureHeaders({ ...headers, [name]: [] }, NOW), name).toEqual({
        ok: false,
        reason: 'missing_headers',
      });
    }
    expect(parseSignatureHeaders({}, NOW)).toEqual({ ok: false, reason: 'missing_headers' });
  });

  it('refuses a header given twice (an array) even when both copies are equal', () => {
    for (const name of Object.values(AgentHeader)) {
      const headers = headersFor();
      expect(parseSignatureHeaders({ ...headers, [name]: [headers[name], headers[name]] }, NOW), name).toEqual({
        ok: false,
        reason: 'duplicate_headers',
      });
    }
  });

  it('refuses an agent id that is not a UUID and accepts one in capitals', () => {
    for (const bad of ['agent-1', `${AGENT_ID} `, `${AGENT_ID}, ${AGENT_ID}`, AGENT_ID.replace(/-/g, '')]) {
      expect(parseSignatureHeaders({ ...headersFor(), [AgentHeader.agentId]: bad }, NOW), bad).toEqual({
        ok: false,
        reason: 'malformed_agent_id',
      });
    }
    expect(parse({ ...headersFor(), [AgentHeader.agentId]: AGENT_ID.toUpperCase() }).agentId).toBe(AGENT_ID);
  });

  it('refuses a signature that is not standard base64 of 64 bytes', () => {
    const signature = headersFor()[AgentHeader.signature];
    for (const bad of [
      signature.slice(0, -2),
      `${signature}==`,
      Buffer.from(signature, 'base64').toString('base64url'),
      'x',
    ]) {
      expect(parseSignatureHeaders({ ...headersFor(), [AgentHeader.signature]: bad }, NOW), bad).toEqual({
        ok: false,
        reason: 'malformed_signature',
      });
    }
  });

  it('ignores unrelated headers and is not confused by upper-case lookups', () => {
    const headers = { ...headersFor(), 'x-other': 'y', 'X-Nonce': 'ignored: Node lower-cases names' };
    expect(parse(headers).nonce).toBe(NONCE);
  });
});
