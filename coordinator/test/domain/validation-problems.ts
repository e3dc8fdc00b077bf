import { expect } from 'vitest';
import { AppError } from '../../src/errors.js';

/** The 422 details of a call that must fail validation. */
export function problems(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('validation_failed');
    return (error as AppError).details as { path: string; message: string }[];
  }
  throw new Error('expected a validation failure');
}
