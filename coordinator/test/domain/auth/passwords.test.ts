import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.js';
import {
  checkNewPassword,
  decoyPasswordHash,
  hashPassword,
  hashToCheck,
  passwordHashing,
  verifyPassword,
} from '../../../src/domain/auth/passwords.js';

describe('passwords', () => {
  it('stores scrypt hashes with a random salt, never the password', async () => {
    const a = await hashPassword('correct horse battery');
    const b = await hashPassword('correct horse battery');
    expect(a).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('correct horse');
  });

  it('verifies the right password and refuses a wrong one', async () => {
    const stored = await hashPassword('correct horse battery');
    expect(await verifyPassword('correct horse battery', stored)).toBe(true);
    expect(await verifyPassword('correct horse batterY', stored)).toBe(false);
  });

  it('refuses hashes of an unknown scheme or shape', async () => {
    expect(await verifyPassword('x', 'md5$abc')).toBe(false);
    expect(await verifyPassword('x', '')).toBe(false);
    // An account with no password (single sign-on made it) costs a hash like any other, the decoy's.
    const decoy = (await decoyPasswordHash()).split('$').slice(1);
    expect(await hashToCheck('!sso')).toEqual({ parts: decoy, decoy: true });
    expect(await verifyPassword('x', '!sso')).toBe(false);
  });
});

describe('checkNewPassword', () => {
  it('counts characters as the API schema does (code points), an emoji as one', () => {
    expect(() => checkNewPassword('🔑'.repeat(8), 'body.password')).not.toThrow();
    expect(() => checkNewPassword('🔑'.repeat(7), 'body.password')).toThrow('must be 8 to 1024 characters, got 7');
    expect(() => checkNewPassword('🔑'.repeat(1024), 'body.password')).not.toThrow();
  });
});

describe('the hashing of passwords', () => {
  it('refuses at once (429, retry in a second) a sign-in beyond the 64 hashes that may wait', async () => {
    const stored = await decoyPasswordHash();
    // The process's queue held by tasks that end when told: one runs, 64 wait; no hash is computed.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const holders = Array.from({ length: 1 + passwordHashing.maxWaiting }, () => passwordHashing.run(() => held));
    try {
      expect(passwordHashing.maxWaiting).toBe(64);
      const refused = await verifyPassword('correct horse battery', stored).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(AppError);
      expect(refused).toMatchObject({ code: 'rate_limited', retryAfter: 1 });
      expect((refused as AppError).message).toMatch(/at once/);
    } finally {
      release();
      await Promise.all(holders);
    }
    // Room again once they ran.
    expect(await verifyPassword('x', stored)).toBe(false);
  });
});
