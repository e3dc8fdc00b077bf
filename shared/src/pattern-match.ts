import vm from 'node:vm';
import safeRegex from 'safe-regex2';

/**
 * Tests a value against a param's `pattern`: an operator's regular expression, tested against a
 * caller's value. A pattern such as `^(a+)+$` backtracks exponentially (26 characters: 3 s; each
 * more doubles it) and would block the event loop. V8's linear-time fallback does not take the
 * `u` flag patterns are compiled with, so: a pattern that can backtrack so (nested quantifiers,
 * by safe-regex2's star-height check) is tested in a `vm` context with a time limit, and a value it
 * cannot decide in time is refused; every other pattern is tested directly (the vm costs ~150 µs
 * a call, the direct test well under 1 µs).
 */

/** How long one test of a risky pattern may run. */
export const PATTERN_BUDGET_MS = 10;

const risky = new WeakMap<RegExp, boolean>();
const sandbox = vm.createContext(Object.create(null) as object);
const test = new vm.Script('pattern.test(value)');

/** True or false; `null` when a risky pattern could not decide within its budget. */
export function matchesPattern(pattern: RegExp, value: string): boolean | null {
  let isRisky = risky.get(pattern);
  if (isRisky === undefined) {
    isRisky = !safeRegex(pattern);
    risky.set(pattern, isRisky);
  }
  if (!isRisky) return pattern.test(value);
  const context = sandbox as { pattern?: RegExp; value?: string };
  context.pattern = pattern;
  context.value = value;
  try {
    // The budget is wall time: a busy machine can take the core from a quick test for longer
    // than that, so a value is refused only when a second try times out too (at most twice the
    // budget for a value that really backtracks).
    for (let attempt = 1; ; attempt++) {
      try {
        return test.runInContext(sandbox, { timeout: PATTERN_BUDGET_MS }) as boolean;
      } catch (error) {
        if ((error as { code?: string }).code !== 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw error;
        if (attempt === 2) return null;
      }
    }
  } finally {
    context.pattern = undefined;
    context.value = undefined;
  }
}
