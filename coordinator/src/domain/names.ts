import { characterCount } from '@drover/shared';
import { describeValue, invalid } from '../errors.js';

/** Longest display name (organizations, agents, storage bindings, enrollment tokens). */
export const MAX_NAME_LENGTH = 255;

// Control characters (C0, DEL, C1) have no place in a display name; they garble logs and terminals.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * The bidirectional embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069): each
 * reorders everything up to its end, so `x\u202Egpj.exe` shows as `xexe.jpg` in a browser or a
 * terminal (the "Trojan Source" characters). The marks U+200E, U+200F and U+061C are kept: they
 * reorder nothing that a visible right-to-left letter in their place would not (no embedding
 * scope), and right-to-left names need them to show punctuation and numbers in their places.
 */
export const BIDI_CONTROL = /[\u202a-\u202e\u2066-\u2069]/;

/** The refusal of a bidirectional formatting character (BIDI_CONTROL), without the character. */
export const BIDI_CONTROL_PROBLEM =
  'must not contain bidirectional formatting characters (U+202A to U+202E, U+2066 to U+2069), which make a name show in another order than it is written';

/** `U+009B` */
const codePoint = (char: string): string => `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * What is wrong with a text others will read (a name, a version, a host name, a filename), or
 * null: a control character or a bidirectional formatting character, named by its code point.
 */
export function hiddenCharacterProblem(value: string): string | null {
  const control = CONTROL.exec(value)?.[0];
  if (control !== undefined) return `must not contain control characters, got ${codePoint(control)}`;
  const bidi = BIDI_CONTROL.exec(value)?.[0];
  if (bidi !== undefined) return `${BIDI_CONTROL_PROBLEM}, got ${codePoint(bidi)}`;
  return null;
}

/**
 * Whether a text others will read (a name, a version, a host name) has control characters, or
 * bidirectional formatting characters (BIDI_CONTROL), which make it show reordered.
 */
export const hasControlCharacters = (value: string): boolean => CONTROL.test(value) || BIDI_CONTROL.test(value);

/** What is wrong with a display name (before trimming), or null when it is fine. */
export function nameProblem(value: string): string | null {
  const name = value.trim();
  if (name.length === 0) return `must not be blank, got ${describeValue(value)}`;
  const length = characterCount(name);
  if (length > MAX_NAME_LENGTH) return `must be at most ${MAX_NAME_LENGTH} characters, got ${length}`;
  if (CONTROL.test(name)) return 'must not contain control characters';
  const bidi = BIDI_CONTROL.exec(name)?.[0];
  if (bidi !== undefined) return `${BIDI_CONTROL_PROBLEM}, got ${codePoint(bidi)}`;
  return null;
}

/**
 * A display name as stored: trimmed, 1 to MAX_NAME_LENGTH characters, without control characters
 * or bidirectional formatting characters (BIDI_CONTROL).
 * The route schema already bounds the raw length; this refuses what a schema cannot say well.
 */
export function cleanName(path: string, value: string): string {
  const problem = nameProblem(value);
  if (problem) throw invalid(path, problem);
  return value.trim();
}
