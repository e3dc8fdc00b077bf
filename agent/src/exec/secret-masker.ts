/** What replaces a secret value in log lines, output values and messages. */
export const MASK = '***';

/** Replaces every secret value in a text with `***`, and knows where a text may be cut safely. */
export interface Masker {
  (text: string): string;
  /** The length of the longest value masked (0: none). */
  readonly longest: number;
  /**
   * Where `text` may be cut, at `limit` or before it, without cutting through a secret value:
   * `limit` when no value straddles it, else the start of the value that does (its end when it
   * starts the text). Masking the two parts then masks what masking the whole would. A value
   * that starts before `limit` must be in `text` whole: keep `longest - 1` characters past it.
   */
  cut(text: string, limit: number): number;
}

/** The shortest line of a multi-line secret that is masked on its own. */
const MIN_SECRET_LINE = 4;

/**
 * The shortest secret value masked, in characters. A value of one or two characters would be
 * masked wherever those characters appear (every `1` of every log line and output), which makes
 * the logs unreadable and tells anyone reading them what the value is; such a value is no secret
 * either (a few hundred guesses). It is left as it is, and said so: `drover-agent workflows` and
 * the agent's log at start warn about it (`shortSecretWarning`).
 */
export const MIN_SECRET_LENGTH = 3;

/**
 * The warning about the secrets whose value is too short to be masked (MIN_SECRET_LENGTH; empty
 * ones aside), naming them, never their values; null when there is none.
 */
export function shortSecretWarning(secrets: Record<string, string>): string | null {
  const names = Object.entries(secrets)
    .filter(([, value]) => value.length > 0 && [...value].length < MIN_SECRET_LENGTH)
    .map(([name]) => `\`${name}\``);
  if (names.length === 0) return null;
  return (
    `secrets.yaml: the value${names.length > 1 ? 's' : ''} of ${names.join(', ')} ${names.length > 1 ? 'are' : 'is'} ` +
    `shorter than ${MIN_SECRET_LENGTH} characters: not masked in logs and outputs (masking would hide every such ` +
    'character in them); use a longer value'
  );
}

/**
 * A masker of `values`: every occurrence of any of them becomes `***`. Longer values are matched
 * first, so a secret that contains another is masked whole. Values shorter than MIN_SECRET_LENGTH
 * (empty ones among them) are ignored. Output is
 * masked line by line, so each line of a multi-line secret (a PEM key, say) is also masked on
 * its own, unless it is shorter than 4 characters. `encode` matches the values as written in
 * another notation instead (JSON's, say), for text in that notation.
 */
export function createMasker(values: Iterable<string>, encode: (value: string) => string = (v) => v): Masker {
  const all: string[] = [];
  for (const value of values) {
    all.push(value);
    if (value.includes('\n')) {
      for (const line of value.split(/\r?\n/)) if (line.trim().length >= MIN_SECRET_LINE) all.push(line);
    }
  }
  const distinct = [...new Set(all.filter((v) => [...v].length >= MIN_SECRET_LENGTH).map(encode))].sort(
    (a, b) => b.length - a.length,
  );
  if (distinct.length === 0) {
    return Object.assign((text: string) => text, { longest: 0, cut: (_: string, limit: number) => limit });
  }
  const pattern = new RegExp(distinct.map(escapeRegExp).join('|'), 'g');
  const longest = distinct[0]!.length;
  const cut = (text: string, limit: number): number => {
    // A value that starts before `limit` ends within `longest - 1` characters after it.
    const window = text.length > limit + longest ? text.slice(0, limit + longest - 1) : text;
    const scan = new RegExp(pattern.source, 'g');
    for (let match = scan.exec(window); match !== null && match.index < limit; match = scan.exec(window)) {
      const end = match.index + match[0].length;
      if (end > limit) return match.index > 0 ? match.index : end;
    }
    return limit;
  };
  return Object.assign((text: string) => text.replace(pattern, MASK), { longest, cut });
}

/**
 * A copy of a JSON value with every string masked, object keys included (two keys that become
 * the same keep the last value).
 */
export function maskDeep(value: unknown, mask: Masker): unknown {
  if (typeof value === 'string') return mask(value);
  if (Array.isArray(value)) return value.map((item) => maskDeep(item, mask));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [mask(key), maskDeep(item, mask)]));
  }
  return value;
}

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
