import { describe, expect, it } from 'vitest';
import { normalizeUserCode } from '../src/user-code.js';

describe('normalizeUserCode', () => {
  it('reads a code in any case, with or without its hyphen or spaces', () => {
    for (const typed of ['WDJB-MJHT', 'wdjbmjht', ' wdjb mjht ', 'Wdjb-Mjht']) {
      expect(normalizeUserCode(typed), typed).toBe('WDJB-MJHT');
    }
  });

  it('refuses what cannot be a code: a wrong length, vowels, look-alikes, digits, other signs', () => {
    for (const typed of [
      '',
      'WDJB-MJH',
      'WDJB-MJHTX',
      'WDJA-MJHT',
      'WDJB-MJH0',
      'WDJB-MJ1T',
      'WDJB_MJHT',
      'WDJB-MJHY',
    ]) {
      expect(normalizeUserCode(typed), typed).toBeNull();
    }
  });
});
