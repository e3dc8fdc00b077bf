import { describe, expect, it } from 'vitest';
import { matchesPattern, PATTERN_BUDGET_MS } from '../src/pattern-match.js';
import { paramValueProblem } from '../src/params.js';

describe('matchesPattern', () => {
  it('tests ordinary patterns directly', () => {
    const tag = /^v\d+$/u;
    expect(matchesPattern(tag, 'v12')).toBe(true);
    expect(matchesPattern(tag, 'x12')).toBe(false);
  });

  it('gives up on a value that makes a risky pattern backtrack, within its budget', () => {
    const greedy = /^(a+)+$/u;
    expect(matchesPattern(greedy, 'aaaa')).toBe(true);
    expect(matchesPattern(greedy, 'aab')).toBe(false);
    const started = performance.now();
    expect(matchesPattern(greedy, `${'a'.repeat(40)}b`)).toBeNull();
    expect(performance.now() - started).toBeLessThan(PATTERN_BUDGET_MS * 100);
  });

  it('says so in the param check', () => {
    const param = { name: 'word', type: 'string', pattern: '^(a+)+$' } as const;
    expect(paramValueProblem(param, `${'a'.repeat(40)}b`)).toMatch(/could not be checked against the pattern/);
    expect(paramValueProblem(param, 'ab')).toMatch(/must match the pattern/);
    expect(paramValueProblem(param, 'aaa')).toBeNull();
  });
});
