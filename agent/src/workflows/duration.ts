/** The longest timeout a workflow or a step may have (the wire schema's maximum): 24 hours. */
export const MAX_TIMEOUT_MS = 86_400_000;

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
const SECONDS = /^\d+(?:\.\d+)?$/;

export const DURATION_EXPECTED = 'a duration like 30s, 5m or a number of seconds';

/**
 * A workflow duration in milliseconds: `500ms`, `30s`, `5m`, `2h`, a combination (`1h30m`), or
 * a plain number of seconds (`90`, `1.5`, as a YAML number or a string). Returns a message
 * ("expected ..., got ...") when the value is not one, is zero or is longer than 24 hours.
 */
export function parseDuration(value: unknown): { ms: number } | { problem: string } {
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) return { problem: `expected ${DURATION_EXPECTED}, got \`${value}\`` };
    ms = value * 1000;
  } else if (typeof value === 'string') {
    const text = value.trim();
    if (SECONDS.test(text)) ms = Number(text) * 1000;
    else if (DURATION.test(text)) {
      ms = 0;
      for (const [, amount, unit] of text.matchAll(PART)) ms += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
    } else return { problem: `expected ${DURATION_EXPECTED}, got \`${value}\`` };
  } else {
    return { problem: `expected ${DURATION_EXPECTED}, got ${describeKind(value)}` };
  }
  ms = Math.round(ms);
  if (ms < 1) return { problem: `must be at least 1ms, got \`${String(value)}\`` };
  if (ms > MAX_TIMEOUT_MS) return { problem: `must be at most 24h, got \`${String(value)}\`` };
  return { ms };
}

/** `5m`, `1h30m`, `1.5s`, `250ms`: a duration in ms as a person would write it. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms % 1000 !== 0) return `${ms / 1000}s`;
  let seconds = ms / 1000;
  const parts: string[] = [];
  for (const [unit, size] of [
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    const n = Math.floor(seconds / size);
    if (n > 0) parts.push(`${n}${unit}`);
    seconds -= n * size;
  }
  return parts.join('');
}

function describeKind(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  return `\`${String(value)}\` (${typeof value})`;
}
