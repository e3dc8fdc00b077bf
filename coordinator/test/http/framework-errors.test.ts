import { describe, expect, it } from 'vitest';
import { isHeadRequest } from '../../src/http/framework-errors.js';

/** A parse error as Node's HTTP server reports it: the bytes it failed in and how far it got. */
const failedIn = (text: string, failedAt = text.length) =>
  Object.assign(new Error('Parse Error'), { rawPacket: Buffer.from(text, 'latin1'), bytesParsed: failedAt });

describe('the method of a request Node could not parse', () => {
  it('is read from the request line the bytes begin with', () => {
    expect(isHeadRequest(failedIn('HEAD /v1/orgs/\u00ff'))).toBe(true);
    expect(isHeadRequest(failedIn('GET /v1/orgs/\u00ff'))).toBe(false);
    expect(isHeadRequest(failedIn(`HEAD /v1/token HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}`))).toBe(true);
    // Node stops at the end of a target too long, and at a byte no target may hold (NBSP here).
    expect(isHeadRequest(failedIn(`HEAD /${'a'.repeat(20_000)} HTTP/1.1\r\n`, 20_006))).toBe(true);
    expect(isHeadRequest(failedIn('HEAD /v1/\u00a0x HTTP/1.1\r\nHost: x\r\n\r\n', 9))).toBe(true);
  });

  it('is that of the last request begun, behind the end of an earlier request or its body', () => {
    const earlier = 'POST /v1/auth/login HTTP/1.1\r\nContent-Length: 7\r\n\r\n{"a":1}';
    expect(isHeadRequest(failedIn(`${earlier}HEAD /v1/orgs/\u00ff`))).toBe(true);
    expect(isHeadRequest(failedIn(`}}}}]]]XYZHEAD /v1/orgs/\u00ff`))).toBe(true);
    expect(isHeadRequest(failedIn(`xxxxHEAD /ok HTTP/1.1\r\n\r\nGET /v1/\u00ff`))).toBe(false);
  });

  it('ignores what follows the point of failure, and is not a HEAD when no request line is there', () => {
    const text = 'GET /v1/\u00ff HTTP/1.1\r\n\r\nHEAD / HTTP/1.1\r\n\r\n';
    expect(isHeadRequest(failedIn(text, text.indexOf('\u00ff')))).toBe(false);
    expect(isHeadRequest(failedIn('a'.repeat(5000)))).toBe(false);
    expect(isHeadRequest(new Error('Request timeout'))).toBe(false);
  });
});
