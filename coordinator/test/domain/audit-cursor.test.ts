import { describe, expect, it } from 'vitest';
import { auditCursor, parseAuditCursor } from '../../src/domain/audit-cursor.js';

describe('audit cursors', () => {
  it('round-trip an entry id', () => {
    expect(parseAuditCursor(auditCursor(42))).toBe(42);
    expect(parseAuditCursor(undefined)).toBeUndefined();
  });

  it('refuse anything this server did not hand out with a 422 naming the cursor', () => {
    for (const cursor of ['', '0', '-1', '01', '1.5', 'abc', '1e3', '99999999999999999', '9007199254740993']) {
      expect(() => parseAuditCursor(cursor), cursor).toThrow(expect.objectContaining({ statusCode: 422 }));
    }
  });
});
