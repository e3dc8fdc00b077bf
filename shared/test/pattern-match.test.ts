import { beforeAll, describe, expect, it } from 'vitest';
import {
  compilePattern,
  loadPatternEngine,
  MAX_RUN_PATTERN_WORK,
  MAX_SET_PATTERN_INSTRUCTIONS,
  MAX_SET_PATTERNS,
  PatternBudget,
  PatternSet,
  type ParamPattern,
} from '../src/pattern-match.js';
import { paramDefinitionProblems, paramValueProblem } from '../src/params.js';

beforeAll(() => loadPatternEngine());

const compiled = (source: string): ParamPattern => {
  const result = compilePattern(source);
  if (!result.ok) throw new Error(`${source}: ${result.problem}`);
  return result.pattern;
};
const problemOf = (source: string): string => {
  const result = compilePattern(source);
  if (result.ok) throw new Error(`${source} compiled`);
  return result.problem;
};

describe('param patterns (RE2)', () => {
  it('tests unanchored unless anchored, with Unicode classes and inline flags', () => {
    expect(compiled('v[0-9]+').test('release v12')).toBe(true);
    expect(compiled('^v[0-9]+$').test('release v12')).toBe(false);
    expect(compiled('^\\p{L}+$').test('héllo')).toBe(true);
    expect(compiled('(?i)^main$').test('MAIN')).toBe(true);
    expect(compiled('^.$').test('😀')).toBe(true);
    // `$` is the end of the value, as in JavaScript without the m flag.
    expect(compiled('a$').test('a\n')).toBe(false);
  });

  // Issue 29: `^(a|a)*$` took ~14 s on 28 characters with JavaScript's backtracking engine.
  it('answers the issue’s pattern in linear time, however long the value', () => {
    const pattern = compiled('^(a|a)*$');
    const started = performance.now();
    expect(pattern.test(`${'a'.repeat(28)}b`)).toBe(false);
    expect(pattern.test(`${'a'.repeat(100_000)}b`)).toBe(false);
    expect(pattern.test('a'.repeat(100_000))).toBe(true);
    expect(compiled('^(a+)+$').test(`${'a'.repeat(100_000)}b`)).toBe(false);
    // A generous bound: milliseconds here; the backtracking engine would not end.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it.each([
    ['(?=a)b', 'a lookahead'],
    ['x(?!a)', 'a lookahead'],
    ['(?<=a)b', 'a lookbehind'],
    ['x(?<!a)b', 'a lookbehind'],
    ['(a)\\1', 'a backreference'],
    ['(?<n>a)\\k<n>', 'a named backreference'],
    ['a++', 'a possessive quantifier'],
    ['a{2}+', 'a possessive quantifier'],
    ['caf\\u00e9', 'the escape `\\u` (write `\\x{00e9}` instead)'],
  ])('refuses %s, naming %s', (source, feature) => {
    expect(problemOf(source)).toContain(`uses ${feature}`);
    expect(problemOf(source)).toContain('which patterns do not support (they are RE2 syntax, matched in linear time)');
  });

  it('says what is wrong with a pattern that is not RE2 syntax', () => {
    expect(problemOf('([a-z]')).toBe('must be a regular expression in RE2 syntax (missing closing ) at `([a-z]`)');
  });

  it('refuses a pattern of more than 5,000 instructions before compiling it', () => {
    const started = performance.now();
    // 128,000 instructions: unpatched, re2js compiles it in ~1 s and ~100 MB.
    expect(problemOf('a{1000}'.repeat(128))).toMatch(/^is too large: it compiles to more than .* the 5000 a pattern/);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(compiled('^.{1,1000}$').instructions).toBeLessThanOrEqual(5000);
  });
});

describe('the limits of a workflow set', () => {
  it(`refuses a pattern past ${MAX_SET_PATTERNS} distinct ones, counting each once`, () => {
    const set = new PatternSet();
    for (let i = 0; i < MAX_SET_PATTERNS; i++) expect(set.compile(`^v${i}$`).ok).toBe(true);
    expect(set.compile('^v0$').ok).toBe(true);
    expect(set.compile('^w$')).toEqual({
      ok: false,
      problem: `is one pattern too many: the workflows of one agent carry at most ${MAX_SET_PATTERNS} distinct patterns`,
    });
  });

  it(`refuses the patterns that take the set past ${MAX_SET_PATTERN_INSTRUCTIONS} instructions`, () => {
    const set = new PatternSet();
    const big = (i: number) => `^${i}[a-z]{1,1000}[0-9]{1,999}$`;
    let i = 0;
    let total = 0;
    while (total + compiled(big(i)).instructions <= MAX_SET_PATTERN_INSTRUCTIONS) {
      expect(set.compile(big(i)).ok).toBe(true);
      total += compiled(big(i)).instructions;
      i++;
    }
    expect(set.compile(big(i))).toEqual({ ok: false, problem: expect.stringMatching(/with this one they reach/) });
    expect(set.compile('^small$')).toEqual({ ok: false, problem: expect.stringMatching(/the patterns before it/) });
  });
});

describe('checking values', () => {
  it('refuses a value too long for what is left of the run’s budget, and charges nothing for it', () => {
    const param = { name: 'w', type: 'string', pattern: '\\pL{500}\\pN' } as const;
    const size = compiled(param.pattern).instructions;
    const budget = new PatternBudget();
    const long = 'a'.repeat(Math.floor(MAX_RUN_PATTERN_WORK / size) + 1);
    expect(paramValueProblem(param, long, budget)).toMatch(
      /^is too long to check against the pattern `\\pL\{500\}\\pN`/,
    );
    expect(paramValueProblem(param, `${'a'.repeat(500)}1`, budget)).toBeNull();
    expect(paramValueProblem(param, 'a'.repeat(1000), budget)).toMatch(/^must match/);
    expect(paramValueProblem(param, 'a'.repeat(1000), budget)).toMatch(/^is too long/);
    // Outside a run, each value has a budget of its own.
    expect(paramValueProblem(param, 'a'.repeat(1000))).toMatch(/^must match/);
  });

  it('refuses every value of a stored pattern the engine refuses, saying that the workflow must change', () => {
    expect(paramValueProblem({ name: 'w', type: 'string', pattern: '^(?!main)' }, 'dev')).toBe(
      "cannot be checked: the workflow's pattern `^(?!main)` uses a lookahead `(?=...)`/`(?!...)`, which patterns " +
        'do not support (they are RE2 syntax, matched in linear time); the workflow must change it, and its agent ' +
        'report it again (docs/agent.md, "Param patterns")',
    );
  });

  it('checks a default against the pattern when the workflow is reported', () => {
    expect(paramDefinitionProblems({ name: 's', type: 'string', pattern: '^v\\d+$', default: 'main' }, 'p')).toEqual([
      { path: 'p.default', message: 'must match the pattern `^v\\d+$`, got `main` (string)' },
    ]);
    expect(paramDefinitionProblems({ name: 's', type: 'string', pattern: '(?=v)' }, 'p')).toEqual([
      { path: 'p.pattern', message: expect.stringMatching(/^uses a lookahead .*; got `\(\?=v\)` \(string\)$/) },
    ]);
  });
});
