import { vi } from 'vitest';

/**
 * The tests' waits, in one place (unit tests of every package import it too). A test waits for
 * what it needs with `eventually`; `eventuallySync` is the same without a turn of the event loop;
 * `sleep` is only for real time that is the subject itself, never to wait for something.
 */

/** What a check answers when the condition does not hold yet. */
type NotYet = undefined | null | false;

const notYet = (value: unknown): value is NotYet => value === undefined || value === null || value === false;
const failure = (what: string | (() => string), timeoutMs: number) =>
  new Error(`${typeof what === 'string' ? what : what()} not met within ${timeoutMs} ms`);

/**
 * The one polling helper of the tests: calls `check` until it returns something other than
 * `undefined`, `null` or `false`, and resolves with that; after `timeoutMs` it fails, naming
 * `what`. Built on vitest's `vi.waitFor` (which also retries a `check` that throws). Where time
 * itself is the subject, tests use an injected clock instead.
 */
export function eventually<T>(
  check: () => T | NotYet | Promise<T | NotYet>,
  timeoutMs = 15_000,
  /** What is waited for, in the failure's message (a function: read when it fails). */
  what: string | (() => string) = 'condition',
): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await check();
      if (notYet(value)) throw failure(what, timeoutMs);
      return value;
    },
    { timeout: timeoutMs, interval: 25 },
  );
}

/**
 * `vi.waitFor` with the suite's patience: retries `check` until it returns without throwing (an
 * `expect` that holds), for 10 s unless told; vitest's own default, 1 s, is too short for a page
 * to re-render on a busy two-core machine.
 */
export function waitFor<T>(
  check: () => T | Promise<T>,
  options: { timeout?: number; interval?: number } = {},
): Promise<T> {
  return vi.waitFor(check, { timeout: 10_000, interval: 50, ...options });
}

/**
 * `eventually` without giving up the thread: calls `check` over and over, synchronously, until it
 * holds. Only for a change outside this process (the kernel's view of a child) that the code
 * under test must not see happen meanwhile: no callback, timer or I/O of this process runs while
 * it spins.
 */
export function eventuallySync<T>(
  check: () => T | NotYet,
  timeoutMs = 5_000,
  what: string | (() => string) = 'condition',
): T {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (!notYet(value)) return value;
    if (performance.now() > until) throw failure(what, timeoutMs);
  }
}

/**
 * Lets `ms` of real time pass. Never a wait for something (that is `eventually`): only where
 * real time is the subject (the pace of a scenario, a grace period running on a server's own
 * timer, a span in which nothing may happen), with a comment saying which.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
