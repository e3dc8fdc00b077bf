import { AppError } from '../../../errors.js';

/**
 * Reading the JSON of a signed chat request (Slack's events, Discord's interactions). A valid
 * signature proves who sent the bytes, not their shape: a body that is JSON but no object, or a
 * field of an unexpected type, is read as the provider's mistake (400, or the field as absent),
 * never as a server error.
 */

/** The body as a JSON object; 400 `bad_request` when it is not JSON, or is JSON but no object. */
export function jsonObjectOf(body: Buffer, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new AppError('bad_request', `${what} is not JSON`);
  }
  const object = objectOf(value);
  if (!object) throw new AppError('bad_request', `${what} is not a JSON object`);
  return object;
}

/** The value when it is a JSON object (not an array, not null), else undefined. */
export function objectOf(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** The value when it is a string, else undefined: a field of another type counts as absent. */
export function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
