import { describe, expect, it } from 'vitest';
import { parseRange } from '../../src/storage/http-range.js';

describe('parseRange', () => {
  it('sends the whole blob without a Range header', () => {
    expect(parseRange(undefined, 100)).toEqual({ kind: 'whole' });
  });

  it('reads a closed, an open-ended and a suffix range', () => {
    expect(parseRange('bytes=0-9', 100)).toEqual({ kind: 'partial', start: 0, end: 9 });
    expect(parseRange('bytes=90-', 100)).toEqual({ kind: 'partial', start: 90, end: 99 });
    expect(parseRange('bytes=-10', 100)).toEqual({ kind: 'partial', start: 90, end: 99 });
    expect(parseRange('bytes= 5-5 ', 100)).toEqual({ kind: 'partial', start: 5, end: 5 });
  });

  it('clamps a range running past the end, and a suffix longer than the blob', () => {
    expect(parseRange('bytes=50-500', 100)).toEqual({ kind: 'partial', start: 50, end: 99 });
    expect(parseRange('bytes=-500', 100)).toEqual({ kind: 'partial', start: 0, end: 99 });
  });

  it('reads the unit in any case, and positions of any length', () => {
    expect(parseRange('Bytes=0-4', 100)).toEqual({ kind: 'partial', start: 0, end: 4 });
    expect(parseRange('BYTES=-3', 100)).toEqual({ kind: 'partial', start: 97, end: 99 });
    expect(parseRange('bytes=0-99999999999999999999999', 100)).toEqual({ kind: 'partial', start: 0, end: 99 });
    expect(parseRange('bytes=99999999999999999999-', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-99999999999999999999', 100)).toEqual({ kind: 'partial', start: 0, end: 99 });
  });

  it('calls a range starting at or past the end, or an empty suffix, unsatisfiable', () => {
    expect(parseRange('bytes=100-', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=100-200', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-0', 100)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-1', 0)).toEqual({ kind: 'unsatisfiable' });
  });

  it('ignores what it does not serve: several ranges, other units, reversed or malformed ranges', () => {
    for (const header of ['bytes=0-1,5-6', 'items=0-1', 'bytes=9-3', 'bytes=-', 'bytes=a-b', 'bytes 0-1', '']) {
      expect(parseRange(header, 100), header).toEqual({ kind: 'whole' });
    }
  });
});
