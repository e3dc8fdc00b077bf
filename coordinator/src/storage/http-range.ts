/**
 * The `Range` request header of a download (RFC 9110 §14): one byte range, `bytes=a-b`, `bytes=a-`
 * or `bytes=-n` (the unit is case-insensitive; positions of any length, a last position past the
 * end is clamped to it). A header that is not of that form (another unit, several ranges,
 * garbage) is ignored and the whole blob is sent, as the RFC allows; a well-formed range outside
 * the blob is unsatisfiable (416).
 */
export type RangeRequest =
  { kind: 'whole' } | { kind: 'partial'; start: number; end: number } | { kind: 'unsatisfiable' };

const SINGLE = /^bytes=[ \t]*(\d*)-(\d*)[ \t]*$/i;

export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (header === undefined) return { kind: 'whole' };
  const match = SINGLE.exec(header);
  if (!match) return { kind: 'whole' };
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return { kind: 'whole' };
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return { kind: 'whole' }; // invalid: ignored
  if (start >= size) return { kind: 'unsatisfiable' };
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  return { kind: 'partial', start, end };
}
