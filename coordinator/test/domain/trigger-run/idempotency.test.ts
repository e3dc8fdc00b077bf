import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.js';
import { idempotencyKeyOf, requestHash } from '../../../src/domain/trigger-run/idempotency.js';

describe('idempotencyKeyOf', () => {
  it('is null without the header and the key itself when valid', () => {
    expect(idempotencyKeyOf(undefined)).toBeNull();
    expect(idempotencyKeyOf('a')).toBe('a');
    expect(idempotencyKeyOf('k'.repeat(255))).toBe('k'.repeat(255));
  });

  it.each([
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
  ])('refuses a key that is %s with a 422 on the header', (_name, key) => {
    try {
      idempotencyKeyOf(key);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe('validation_failed');
      expect((error as AppError).details).toEqual([{ path: 'headers.idempotency-key', message: expect.any(String) }]);
    }
  });

  it('refuses a header sent several times as an array', () => {
    expect(() => idempotencyKeyOf(['a', 'b'])).toThrow(AppError);
  });
});

describe('requestHash', () => {
  it('ignores key order and number spelling (RFC 8785)', () => {
    expect(requestHash({ ref: 'main', params: { b: 1, a: [1.0, 'x'] } })).toBe(
      requestHash({ params: { a: [1, 'x'], b: 1.0 }, ref: 'main' }),
    );
  });

  it('treats a missing body as an empty object', () => {
    expect(requestHash(undefined)).toBe(requestHash({}));
  });

  it('tells different bodies apart', () => {
    expect(requestHash({ ref: 'a' })).not.toBe(requestHash({ ref: 'b' }));
    expect(requestHash({ params: { a: '1' } })).not.toBe(requestHash({ params: { a: 1 } }));
  });

  it('is lowercase hex SHA-256', () => {
    expect(requestHash({})).toBe('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
  });
});
