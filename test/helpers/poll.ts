import { vi } from 'vitest';

/**
 * The one polling helper of the tests: calls `check` until it returns something other than
 * `undefined`, `null` or `false`, and resolves with that; after `timeoutMs` it fails, naming
 * `what`. Built on vitest's `vi.waitFor` (which also retries a `check` that throws). Where time
 * itself is the subject, tests use an injected clock instead.
 */
export function eventually<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 15_000,
  /** What is waited for, in the failure's message (a function: read when it fails). */
  what: string | (() => string) = 'condition',
): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await check();
      if (value === undefined || value === null || value === false) {
        throw new Error(`${typeof what === 'string' ? what : what()} not met within ${timeoutMs} ms`);
      }
      return value;
    },
    { timeout: timeoutMs, interval: 25 },
  );
}
