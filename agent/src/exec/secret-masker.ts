/** What replaces a secret value in log lines, output values and messages. */
export const MASK = '***';

export type Masker = (text: string) => string;

/** The shortest line of a multi-line secret that is masked on its own. */
const MIN_SECRET_LINE = 4;

/**
 * A function that replaces every occurrence of any of `values` with `***`. Longer values are
 * matched first, so a secret that contains another is masked whole. Empty values are ignored.
 * Output is masked line by line, so each line of a multi-line secret (a PEM key, say) is also
 * masked on its own, unless it is shorter than 4 characters.
 */
export function createMasker(values: Iterable<string>): Masker {
  const all: string[] = [];
  for (const value of values) {
    all.push(value);
    if (value.includes('\n')) {
      for (const line of value.split(/\r?\n/)) if (line.trim().length >= MIN_SECRET_LINE) all.push(line);
    }
  }
  const distinct = [...new Set(all.filter((v) => v.length > 0))].sort((a, b) => b.length - a.length);
  if (distinct.length === 0) return (text) => text;
  const pattern = new RegExp(distinct.map(escapeRegExp).join('|'), 'g');
  return (text) => text.replace(pattern, MASK);
}

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
