import { describe, expect, it } from 'vitest';
import { parseCursor } from '../../src/http/pagination.js';

describe('page cursors', () => {
  it('stand for the integer key they carry', () => {
    expect(parseCursor('42')).toBe(42);
    expect(parseCursor(undefined)).toBeUndefined();
  });

  it('refuse anything this server did not hand out with a 422 naming the cursor', () => {
    for (const cursor of ['', '0', '-1', '01', '1.5', 'abc', '1e3', '99999999999999999', '9007199254740993']) {
      expect(() => parseCursor(cursor), cursor).toThrow(expect.objectContaining({ statusCode: 422 }));
    }
  });
});
