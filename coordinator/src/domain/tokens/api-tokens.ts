import { API_TOKEN_PREFIX } from '@drover/shared';
import type { ApiToken, Grant } from '../model/api-tokens.js';
import type { RateLimits } from '../model/rate-limits.js';
import { AppError, describeValue, validationFailed, type ValidationDetail } from '../../errors.js';
import { LAST_STORABLE_MS, storedInstant, UNSTORABLE_INSTANT } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashBearerSecret, newBearerSecret, secretHint } from '../../util/secrets.js';
import { nameProblem } from '../names.js';
import { parseScopes, type GrantInput } from './scopes.js';

/** Issuing and revoking API tokens: limits, expiry, the plaintext secret and who may revoke. */

export const MAX_RATE_LIMIT = 1_000_000_000;

/** Each limit is optional: omitted or null means no limit in that window. */
export interface RateLimitInput {
  rateLimitPerMinute?: number | null;
  rateLimitPerHour?: number | null;
  rateLimitPerDay?: number | null;
}

const WINDOWS = [
  ['rateLimitPerMinute', 'perMinute'],
  ['rateLimitPerHour', 'perHour'],
  ['rateLimitPerDay', 'perDay'],
] as const;

/**
 * The token's job limits. Each is an integer of at least 1, or null or omitted (no limit in that window).
 * The three are independent (docs/trigger-runs.md, "Rate limits"), so any combination is taken: a per-minute limit
 * above the per-hour one simply never binds first.
 */
export function parseRateLimits(input: RateLimitInput): RateLimits {
  const problems: ValidationDetail[] = [];
  for (const [field] of WINDOWS) {
    const value = input[field] ?? null;
    if (value !== null && (!Number.isInteger(value) || value < 1 || value > MAX_RATE_LIMIT)) {
      problems.push({
        path: `body.${field}`,
        message: `must be an integer from 1 to ${MAX_RATE_LIMIT} or null (no limit), got ${describeValue(value)}`,
      });
    }
  }
  if (problems.length > 0) throw validationFailed(problems);
  return {
    perMinute: input.rateLimitPerMinute ?? null,
    perHour: input.rateLimitPerHour ?? null,
    perDay: input.rateLimitPerDay ?? null,
  };
}

/** The expiry as a canonical ISO timestamp, or null (never expires). It must lie in the future. */
export function parseExpiry(expiresAt: string | null | undefined, nowMs: number): string | null {
  if (expiresAt === undefined || expiresAt === null) return null;
  // A time past the year 9999 (`9999-12-31T23:00:00-05:00` is in 10000) or a leap second cannot be
  // stored: `toISOString` writes it `+010000-...`, which PostgreSQL refuses and SQLite would keep.
  const stored = storedInstant(expiresAt);
  if (stored === null)
    throw validationFailed([
      { path: 'body.expiresAt', message: `${UNSTORABLE_INSTANT}, got ${describeValue(expiresAt)}` },
    ]);
  const ms = Date.parse(stored);
  if (ms <= nowMs) {
    throw validationFailed([
      {
        path: 'body.expiresAt',
        message: `must be in the future (now is ${new Date(nowMs).toISOString()}), got ${describeValue(expiresAt)}`,
      },
    ]);
  }
  return stored;
}

/**
 * The expiry `seconds` after `nowMs`, the coordinator's time: a duration a client counts on its own
 * clock (a laptop hours ahead) would make a token live longer or shorter than asked. Alone: with
 * `expiresAt` too it is refused (422), as is an end past the year 9999.
 */
function expiryAfter(seconds: number, withExpiresAt: boolean, nowMs: number): string {
  const path = 'body.expiresInSeconds';
  if (withExpiresAt) throw validationFailed([{ path, message: 'give either expiresAt or expiresInSeconds, not both' }]);
  const at = nowMs + seconds * 1000;
  if (!(at <= LAST_STORABLE_MS)) {
    const most = Math.floor((LAST_STORABLE_MS - nowMs) / 1000);
    throw validationFailed([
      { path, message: `must end by the year 9999: at most ${most} seconds from now, got ${describeValue(seconds)}` },
    ]);
  }
  return new Date(at).toISOString();
}

export interface IssuedToken {
  token: ApiToken;
  /** The `drv_...` secret: returned once to the issuer, never stored. */
  plaintext: string;
  /** What is stored to recognise it. */
  hash: string;
}

export function issueToken(fields: {
  orgId: string;
  userId: string;
  name: string;
  scopes: Grant[];
  rateLimit: RateLimits;
  expiresAt: string | null;
  createdAt: string;
}): IssuedToken {
  const plaintext = newBearerSecret(API_TOKEN_PREFIX);
  return {
    plaintext,
    hash: hashBearerSecret(plaintext),
    token: { id: newId(), hint: secretHint(plaintext, API_TOKEN_PREFIX), revokedAt: null, ...fields },
  };
}

export interface IssueRequest extends RateLimitInput {
  name: string;
  scopes: GrantInput[];
  expiresAt?: string | null;
  /** Instead of `expiresAt`: how long after its issue the token expires, counted on the coordinator's clock. */
  expiresInSeconds?: number;
}

export interface IssueFields {
  name: string;
  scopes: Grant[];
  rateLimit: RateLimits;
  expiresAt: string | null;
}

/**
 * Everything of an issue request that can be checked without the database, with every
 * problem in one 422. The grants' targets are checked against the organization afterwards
 * (scopes.ts `checkGrantTargets`).
 */
export function parseIssueRequest(body: IssueRequest, nowMs: number): IssueFields {
  const problems: ValidationDetail[] = [];
  const attempt = <T>(parse: () => T): T | undefined => {
    try {
      return parse();
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'validation_failed') throw error;
      problems.push(...(error.details as ValidationDetail[]));
      return undefined;
    }
  };
  const problem = nameProblem(body.name);
  if (problem) problems.push({ path: 'body.name', message: problem });
  const scopes = attempt(() => parseScopes(body.scopes));
  const rateLimit = attempt(() => parseRateLimits(body));
  const expiresAt = attempt(() =>
    body.expiresInSeconds === undefined
      ? parseExpiry(body.expiresAt, nowMs)
      : expiryAfter(body.expiresInSeconds, body.expiresAt !== undefined, nowMs),
  );
  if (problems.length > 0) throw validationFailed(problems);
  return { name: body.name.trim(), scopes: scopes!, rateLimit: rateLimit!, expiresAt: expiresAt ?? null };
}
