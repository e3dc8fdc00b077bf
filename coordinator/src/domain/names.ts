import { characterCount } from '@drover/shared';
import { describeValue, invalid } from '../errors.js';

/** Longest display name (organizations, agents, storage bindings, enrollment tokens). */
export const MAX_NAME_LENGTH = 255;

// Control characters (C0, DEL, C1) have no place in a display name; they garble logs and terminals.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Whether a text others will read (a name, a version, a host name) has control characters. */
export const hasControlCharacters = (value: string): boolean => CONTROL.test(value);

/** What is wrong with a display name (before trimming), or null when it is fine. */
export function nameProblem(value: string): string | null {
  const name = value.trim();
  if (name.length === 0) return `must not be blank, got ${describeValue(value)}`;
  const length = characterCount(name);
  if (length > MAX_NAME_LENGTH) return `must be at most ${MAX_NAME_LENGTH} characters, got ${length}`;
  if (CONTROL.test(name)) return 'must not contain control characters';
  return null;
}

/**
 * A display name as stored: trimmed, 1 to MAX_NAME_LENGTH characters, without control characters.
 * The route schema already bounds the raw length; this refuses what a schema cannot say well.
 */
export function cleanName(path: string, value: string): string {
  const problem = nameProblem(value);
  if (problem) throw invalid(path, problem);
  return value.trim();
}
