import { describe, expect, it } from 'vitest';
import { expiryOf } from '../../dashboard/src/pages/token-expiry.js';

/** The expiry the API tokens page's issue form sends for each of its choices. */
describe('the issue form expiry', () => {
  it('sends "in 7 days" as seconds the coordinator counts on its clock, not a time of this browser', () => {
    expect(expiryOf({ expiry: String(7 * 86_400_000), expiresAt: '' })).toEqual({ expiresInSeconds: 604_800 });
    expect(expiryOf({ expiry: 'never', expiresAt: '' })).toEqual({ expiresAt: null });
    expect(expiryOf({ expiry: 'at', expiresAt: '2030-01-01T10:00' })).toEqual({
      expiresAt: new Date(2030, 0, 1, 10, 0).toISOString(),
    });
  });
});
