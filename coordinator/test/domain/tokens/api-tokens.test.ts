import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.js';
import { issueToken, parseExpiry, parseIssueRequest, parseRateLimits } from '../../../src/domain/tokens/api-tokens.js';
import { hashBearerSecret } from '../../../src/util/secrets.js';

const NOW = Date.parse('2026-01-02T03:04:05.000Z');
const noLimits = { rateLimitPerMinute: null, rateLimitPerHour: null, rateLimitPerDay: null };

function paths(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('validation_failed');
    return ((error as AppError).details as { path: string }[]).map((d) => d.path);
  }
  throw new Error('expected a validation failure');
}

describe('API token rate limits', () => {
  it('accepts integers of at least 1 and null for no limit', () => {
    expect(parseRateLimits({ rateLimitPerMinute: 10, rateLimitPerHour: null, rateLimitPerDay: 1000 })).toEqual({
      perMinute: 10,
      perHour: null,
      perDay: 1000,
    });
    expect(parseRateLimits(noLimits)).toEqual({ perMinute: null, perHour: null, perDay: null });
  });

  it('refuses zero, negatives and fractions naming the field', () => {
    expect(paths(() => parseRateLimits({ rateLimitPerMinute: 0, rateLimitPerHour: -1, rateLimitPerDay: 1.5 }))).toEqual(
      ['body.rateLimitPerMinute', 'body.rateLimitPerHour', 'body.rateLimitPerDay'],
    );
  });

  it('takes the three windows independently, whatever their order', () => {
    expect(parseRateLimits({ rateLimitPerMinute: 100, rateLimitPerHour: 10, rateLimitPerDay: null })).toEqual({
      perMinute: 100,
      perHour: 10,
      perDay: null,
    });
    expect(parseRateLimits({ rateLimitPerMinute: null, rateLimitPerHour: 10, rateLimitPerDay: 5 }).perDay).toBe(5);
  });
});

describe('API token expiry', () => {
  it('never expires when omitted or null', () => {
    expect(parseExpiry(undefined, NOW)).toBeNull();
    expect(parseExpiry(null, NOW)).toBeNull();
  });

  it('keeps a future timestamp in canonical UTC form', () => {
    expect(parseExpiry('2026-01-02T06:04:05+02:00', NOW)).toBe('2026-01-02T04:04:05.000Z');
    expect(parseExpiry('2027-01-01T00:00:00Z', NOW)).toBe('2027-01-01T00:00:00.000Z');
  });

  it('refuses the present, the past and garbage', () => {
    expect(paths(() => parseExpiry('2026-01-02T03:04:05.000Z', NOW))).toEqual(['body.expiresAt']);
    expect(paths(() => parseExpiry('2020-01-01T00:00:00Z', NOW))).toEqual(['body.expiresAt']);
    expect(paths(() => parseExpiry('tomorrow', NOW))).toEqual(['body.expiresAt']);
  });

  it('refuses a time that cannot be stored: past the year 9999, or a leap second', () => {
    // An offset moves this one into the year 10000: `+010000-01-01T04:00:00.000Z`.
    expect(paths(() => parseExpiry('9999-12-31T23:00:00-05:00', NOW))).toEqual(['body.expiresAt']);
    expect(paths(() => parseExpiry('2030-06-30T23:59:60Z', NOW))).toEqual(['body.expiresAt']);
    expect(parseExpiry('9999-12-31T23:59:59.999Z', NOW)).toBe('9999-12-31T23:59:59.999Z');
  });
});

describe('API token issue requests', () => {
  it('collects the problems of every field in one answer', () => {
    expect(
      paths(() =>
        parseIssueRequest(
          {
            name: ' ',
            scopes: [{ type: 'agent', agentIds: [] }],
            rateLimitPerMinute: 0,
            rateLimitPerHour: null,
            rateLimitPerDay: null,
            expiresAt: '2000-01-01T00:00:00Z',
          },
          NOW,
        ),
      ),
    ).toEqual(['body.name', 'body.scopes.0.agentIds', 'body.rateLimitPerMinute', 'body.expiresAt']);
  });

  it('trims the name and normalizes the rest', () => {
    expect(parseIssueRequest({ name: ' ci ', scopes: [], ...noLimits }, NOW)).toEqual({
      name: 'ci',
      scopes: [],
      rateLimit: { perMinute: null, perHour: null, perDay: null },
      expiresAt: null,
    });
  });

  it('issues a drv_ secret whose hash and hint are stored, never the secret', () => {
    const issued = issueToken({
      orgId: 'org',
      userId: 'user',
      name: 'ci',
      scopes: [],
      rateLimit: { perMinute: null, perHour: null, perDay: null },
      expiresAt: null,
      createdAt: new Date(NOW).toISOString(),
    });
    expect(issued.plaintext).toMatch(/^drv_[A-Za-z0-9_-]{43}$/);
    expect(issued.hash).toBe(hashBearerSecret(issued.plaintext));
    expect(issued.token.hint).toBe(`drv_…${issued.plaintext.slice(-4)}`);
    expect(JSON.stringify(issued.token)).not.toContain(issued.plaintext);
    expect(issued.token).toMatchObject({ orgId: 'org', userId: 'user', revokedAt: null });
  });
});
