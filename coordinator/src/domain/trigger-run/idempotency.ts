import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { conflict, describeValue, invalid, type AppError } from '../../errors.js';

/**
 * Idempotency of trigger runs (docs/trigger-runs.md, "Idempotency"). A key is tracked per trigger
 * and workflow name; it is 1 to 255 characters and remembered for 24 hours. Two calls carry
 * "the same body" when the SHA-256 of the RFC 8785 (JCS) canonical JSON of their parsed bodies
 * is equal, so key order and number spelling (`1.0` and `1`) do not matter; a missing body
 * counts as `{}`.
 */

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

// canonicalize is CommonJS (module.exports = fn); its typings declare a default export.
const canonicalize = canonicalizeModule as unknown as (value: unknown) => string | undefined;

/**
 * The 409 of a key used before for another call: another body, or (`usedFor`) another kind of run,
 * the trigger having moved between one agent and a selector since (one job, a batch).
 */
export function idempotencyConflict(usedFor?: 'job' | 'batch'): AppError {
  const message =
    usedFor === 'batch'
      ? 'This Idempotency-Key was already used for a batch of this trigger (it ran on a selector then); send another key'
      : usedFor === 'job'
        ? 'This Idempotency-Key was already used for one job of this trigger (it ran on one agent then); send another key'
        : 'This Idempotency-Key was already used with a different request body for this trigger and workflow';
  return conflict(message, 'idempotency_conflict');
}

/** The request's Idempotency-Key, null when absent, or a 422. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  const path = 'headers.idempotency-key';
  if (Array.isArray(header)) throw invalid(path, 'must be sent once');
  if (header.length === 0 || header.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw invalid(
      path,
      `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters, got ${header.length === 0 ? 'an empty value' : `${header.length} characters`}`,
    );
  }
  return header;
}

/**
 * Lowercase hex SHA-256 of the canonical JSON of the body. The body must be plain JSON (finite
 * numbers): the route checks that before (params.ts), so a failure here is a server bug.
 */
export function requestHash(body: unknown): string {
  const canonical = canonicalize(body ?? {});
  if (canonical === undefined) throw new Error(`request body cannot be canonicalized: ${describeValue(body)}`);
  return createHash('sha256').update(canonical).digest('hex');
}
