import type { ParamDefinition } from '@drover/shared';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.js';
import { MAX_PARAMS_DEPTH, resolveRunParams } from '../../../src/domain/trigger-run/params.js';
import { problems } from '../validation-problems.js';

const schema: ParamDefinition[] = [
  { name: 'env', type: 'enum', options: ['staging', 'prod'], required: true },
  { name: 'replicas', type: 'number', min: 1, max: 10, default: 2 },
  { name: 'tag', type: 'string', pattern: '^v\\d+$' },
  { name: 'dryRun', type: 'boolean' },
  { name: 'region', type: 'string', required: true, default: 'eu' },
];

describe('resolveRunParams', () => {
  it('applies defaults, a required parameter with a default included', () => {
    expect(resolveRunParams(schema, { env: 'prod' })).toEqual({ env: 'prod', replicas: 2, region: 'eu' });
  });

  it('keeps the values sent', () => {
    expect(resolveRunParams(schema, { env: 'staging', replicas: 10, tag: 'v3', dryRun: true, region: 'us' })).toEqual({
      env: 'staging',
      replicas: 10,
      tag: 'v3',
      dryRun: true,
      region: 'us',
    });
  });

  it('refuses a param the workflow does not declare, listing the declared ones', () => {
    expect(problems(() => resolveRunParams(schema, { env: 'prod', replica: 3 }))).toEqual([
      {
        path: 'params.replica',
        message:
          "is not a parameter of this workflow (the workflow's params are `env`, `replicas`, `tag`, `dryRun`, `region`)",
      },
    ]);
    expect(problems(() => resolveRunParams([], { x: 1 }))).toEqual([
      { path: 'params.x', message: 'is not a parameter of this workflow (the workflow declares no params)' },
    ]);
    expect(resolveRunParams([], undefined)).toEqual({});
  });

  // Issue 29: `SAFE` passed unchecked beside a valid `safe`, and replaced its variable on the agent.
  it('refuses an undeclared param that would set the variable of a declared one, naming both', () => {
    const safe: ParamDefinition[] = [{ name: 'safe', type: 'string', pattern: '^[a-z]+$' }];
    expect(problems(() => resolveRunParams(safe, { safe: 'ok', SAFE: 'x; touch /tmp/p' }))).toEqual([
      {
        path: 'params.SAFE',
        message:
          'is not a parameter of this workflow, and `SAFE` and `safe` would both be the environment variable DROVER_PARAM_SAFE; send `safe` only',
      },
    ]);
  });

  it('refuses declared params that collide, in a workflow stored before such names were refused', () => {
    const twins: ParamDefinition[] = [
      { name: 'a-b', type: 'string' },
      { name: 'a_b', type: 'string', default: 'x' },
    ];
    expect(problems(() => resolveRunParams(twins, { 'a-b': 'y' }))).toEqual([
      {
        path: 'params.a_b',
        message:
          '`a_b` and `a-b` would both be the environment variable DROVER_PARAM_A_B; the workflow must rename one of them',
      },
    ]);
  });

  it('passes everything through without a schema, but two names of one variable', () => {
    const params = { a: [1, { b: null }], c: 'x' };
    expect(resolveRunParams(null, params)).toBe(params);
    expect(problems(() => resolveRunParams(null, { safe: 'ok', SAFE: 'x; touch /tmp/p', 'a.b': 1, a_b: 2 }))).toEqual([
      {
        path: 'params.SAFE',
        message: '`SAFE` and `safe` would both be the environment variable DROVER_PARAM_SAFE; send only one',
      },
      {
        path: 'params.a_b',
        message: '`a_b` and `a.b` would both be the environment variable DROVER_PARAM_A_B; send only one',
      },
    ]);
  });

  it('refuses a missing required parameter, saying what is expected', () => {
    expect(problems(() => resolveRunParams(schema, {}))).toEqual([
      { path: 'params.env', message: 'is required (one of `staging`, `prod`)' },
    ]);
    expect(problems(() => resolveRunParams([{ name: 'n', type: 'number', required: true }], undefined))).toEqual([
      { path: 'params.n', message: 'is required (a number)' },
    ]);
  });

  it.each([
    ['a number as a string', { replicas: '3' }, 'replicas', 'must be a number, got `3` (string)'],
    ['a number below min', { replicas: 0 }, 'replicas', 'must be at least 1, got `0` (number)'],
    ['a number above max', { replicas: 10.5 }, 'replicas', 'must be at most 10, got `10.5` (number)'],
    [
      'a string not matching the pattern',
      { tag: 'v1x' },
      'tag',
      'must match the pattern `^v\\d+$`, got `v1x` (string)',
    ],
    ['a boolean as a string', { dryRun: 'true' }, 'dryRun', 'must be a boolean, got `true` (string)'],
    ['an enum value not listed', { env: 'dev' }, 'env', 'must be one of `staging`, `prod`, got `dev` (string)'],
    ['null', { tag: null }, 'tag', 'must be a string, got `null`'],
  ])('refuses %s, naming the parameter', (_name, given, name, message) => {
    expect(problems(() => resolveRunParams(schema, { env: 'prod', ...given }))).toEqual([
      { path: `params.${name}`, message },
    ]);
  });

  it('reports every problem at once', () => {
    expect(problems(() => resolveRunParams(schema, { replicas: 99, tag: 'x' })).map((p) => p.path)).toEqual([
      'params.env',
      'params.replicas',
      'params.tag',
    ]);
  });

  it('accepts a pattern match again after a cached refusal', () => {
    expect(() => resolveRunParams(schema, { env: 'prod', tag: 'nope' })).toThrow(AppError);
    expect(resolveRunParams(schema, { env: 'prod', tag: 'v12' }).tag).toBe('v12');
  });

  it('refuses a value of a stored pattern RE2 does not support, saying that the workflow must change', () => {
    // A workflow reported before patterns were RE2 syntax: refused at report today, maybe stored.
    const stored: ParamDefinition[] = [{ name: 'branch', type: 'string', pattern: '^(?!main$)' }];
    expect(problems(() => resolveRunParams(stored, { branch: 'dev' }))).toEqual([
      {
        path: 'params.branch',
        message: expect.stringMatching(
          /^cannot be checked: the workflow's pattern `\^\(\?!main\$\)` uses a lookahead .*; the workflow must change it, and its agent report it again/,
        ),
      },
    ]);
    // Left out, it is not checked.
    expect(resolveRunParams(stored, {})).toEqual({});
  });

  it('spends at most the run’s budget on patterns, over all its values', () => {
    const hostile: ParamDefinition[] = ['a', 'b', 'c'].map((name) => ({
      name,
      type: 'string',
      pattern: '\\pL{500}\\pN',
    }));
    const value = `${'x'.repeat(700)}1`;
    expect(problems(() => resolveRunParams(hostile, { a: value, b: value, c: value }))).toEqual([
      { path: 'params.c', message: expect.stringMatching(/^is too long to check against the pattern/) },
    ]);
  });

  it('refuses payloads that are not plain JSON, with or without a schema', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < MAX_PARAMS_DEPTH + 1; i++) deep = [deep];
    expect(problems(() => resolveRunParams(null, { deep }))).toEqual([
      { path: 'params.deep', message: `is nested more than ${MAX_PARAMS_DEPTH} levels deep` },
    ]);
    expect(problems(() => resolveRunParams(schema, { env: 'prod', big: { x: Infinity } }))).toEqual([
      { path: 'params.big', message: 'must be a finite number, got `Infinity` (number)' },
    ]);
    // A top-level string becomes the step's environment variable, which cannot hold a NUL.
    expect(problems(() => resolveRunParams(null, { x: 'a\u0000b', nested: ['a\u0000b'] }))).toEqual([
      {
        path: 'params.x',
        message: "must not contain a NUL character (U+0000): a step's environment variable cannot hold one",
      },
    ]);
    let ok: unknown = 'leaf';
    for (let i = 0; i < MAX_PARAMS_DEPTH - 1; i++) ok = [ok];
    expect(resolveRunParams(null, { ok })).toEqual({ ok });
  });
});
