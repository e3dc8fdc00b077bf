import { describe, expect, it } from 'vitest';
import type { ParamDefinition, WorkflowDefinition } from '@drover/shared';
import {
  paramDefinitionProblems,
  paramValueProblem,
  workflowDefinitionProblems,
} from '../../../src/domain/workflows/workflow-definitions.js';

const wf = (name: string, extra: Partial<WorkflowDefinition> = {}): WorkflowDefinition => ({
  name,
  steps: [{ run: 'true' }],
  ...extra,
});

/** The problems of one parameter as `path: message` lines. */
const problemsOf = (param: ParamDefinition) =>
  paramDefinitionProblems(param, 'p').map((d) => `${d.path}: ${d.message}`);

describe('workflow set checks', () => {
  it('accepts a well-formed set, including an empty one', () => {
    expect(workflowDefinitionProblems([])).toEqual([]);
    expect(
      workflowDefinitionProblems([
        wf('build', {
          secretsKeys: ['TOKEN', 'KEY'],
          paramsSchema: [
            { name: 'branch', type: 'string', pattern: '^[a-z]+$', default: 'main' },
            { name: 'count', type: 'number', min: 1, max: 10, default: 3 },
            { name: 'dry', type: 'boolean', default: false },
            { name: 'env', type: 'enum', options: ['staging', 'prod'], default: 'prod', required: true },
          ],
        }),
        wf('deploy', { paramsSchema: null }),
      ]),
    ).toEqual([]);
  });

  it('refuses a workflow name given twice, naming both places', () => {
    expect(workflowDefinitionProblems([wf('a'), wf('b'), wf('a')])).toEqual([
      { path: 'body.workflows.2.name', message: 'duplicates body.workflows.0.name `a`' },
    ]);
  });

  it('refuses two parameter names that would set the same environment variable on the agent', () => {
    const problems = workflowDefinitionProblems([
      wf('a', {
        paramsSchema: [
          { name: 'safe', type: 'string', pattern: '^[a-z]+$' },
          { name: 'SAFE', type: 'string' },
        ],
      }),
    ]);
    expect(problems).toEqual([
      {
        path: 'body.workflows.0.paramsSchema.1.name',
        message: '`SAFE` and `safe` would both be the environment variable DROVER_PARAM_SAFE; rename one',
      },
    ]);
  });

  it('treats names as case-sensitive', () => {
    expect(workflowDefinitionProblems([wf('Deploy'), wf('deploy')])).toEqual([]);
  });

  it('refuses a parameter name or a secret name given twice within one workflow', () => {
    const problems = workflowDefinitionProblems([
      wf('a', {
        secretsKeys: ['K', 'K'],
        paramsSchema: [
          { name: 'x', type: 'string' },
          { name: 'x', type: 'number' },
        ],
      }),
    ]);
    expect(problems).toEqual([
      { path: 'body.workflows.0.paramsSchema.1.name', message: 'duplicates body.workflows.0.paramsSchema.0.name `x`' },
      { path: 'body.workflows.0.secretsKeys.1', message: 'duplicates an earlier value `K` (string)' },
    ]);
  });

  it('allows the same parameter name in two different workflows', () => {
    const params: ParamDefinition[] = [{ name: 'x', type: 'string' }];
    expect(workflowDefinitionProblems([wf('a', { paramsSchema: params }), wf('b', { paramsSchema: params })])).toEqual(
      [],
    );
  });
});

describe('parameter definition checks', () => {
  it('requires non-empty, distinct options for an enum', () => {
    expect(problemsOf({ name: 'e', type: 'enum' })).toEqual([
      'p.options: must list at least one value for a parameter of type `enum`',
    ]);
    expect(problemsOf({ name: 'e', type: 'enum', options: [] })).toHaveLength(1);
    expect(problemsOf({ name: 'e', type: 'enum', options: ['a', 'b', 'a'] })).toEqual([
      'p.options.2: duplicates an earlier value `a` (string)',
    ]);
  });

  it('refuses keywords that do not belong to the type', () => {
    expect(problemsOf({ name: 's', type: 'string', options: ['a'] })).toEqual([
      'p.options: does not apply to a parameter of type `string`',
    ]);
    expect(problemsOf({ name: 's', type: 'string', min: 1 })).toEqual([
      'p.min: does not apply to a parameter of type `string`',
    ]);
    expect(problemsOf({ name: 'n', type: 'number', pattern: '^1$' })).toEqual([
      'p.pattern: does not apply to a parameter of type `number`',
    ]);
    expect(problemsOf({ name: 'b', type: 'boolean', max: 1 })).toEqual([
      'p.max: does not apply to a parameter of type `boolean`',
    ]);
    expect(problemsOf({ name: 'e', type: 'enum', options: ['a'], pattern: 'a' })).toEqual([
      'p.pattern: does not apply to a parameter of type `enum`',
    ]);
  });

  it('requires the pattern to be RE2 syntax, naming a feature of JavaScript that RE2 lacks', () => {
    expect(problemsOf({ name: 's', type: 'string', pattern: '([a-z]' })).toEqual([
      'p.pattern: must be a regular expression in RE2 syntax (missing closing ) at `([a-z]`); got `([a-z]` (string)',
    ]);
    expect(problemsOf({ name: 's', type: 'string', pattern: '^(?!main$)' })).toEqual([
      'p.pattern: uses a lookahead `(?=...)`/`(?!...)`, which patterns do not support (they are RE2 syntax, ' +
        'matched in linear time); got `^(?!main$)` (string)',
    ]);
    expect(problemsOf({ name: 's', type: 'string', pattern: '^\\p{L}+$', default: 'héllo' })).toEqual([]);
  });

  it('refuses unsupported patterns at their path in the set, and keeps the limits across the workflows', () => {
    const pattern = (p: string): ParamDefinition[] => [{ name: 's', type: 'string', pattern: p }];
    expect(
      workflowDefinitionProblems([
        wf('a', { paramsSchema: pattern('^v1$') }),
        wf('b', { paramsSchema: pattern('(a)\\1') }),
      ]),
    ).toEqual([
      {
        path: 'body.workflows.1.paramsSchema.0.pattern',
        message: expect.stringMatching(/^uses a backreference \(`\\1`\), which patterns do not support/),
      },
    ]);
    const many = Array.from({ length: 3 }, (_, w) =>
      wf(`w${w}`, {
        paramsSchema: Array.from({ length: 100 }, (_, i) => pattern(`^${w}-${i}$`)[0]!).map((p, i) => ({
          ...p,
          name: `p${i}`,
        })),
      }),
    );
    expect(workflowDefinitionProblems(many).map((d) => d.path)).toEqual(
      Array.from({ length: 44 }, (_, i) => `body.workflows.2.paramsSchema.${56 + i}.pattern`),
    );
  });

  it('requires min not above max, and allows them equal', () => {
    expect(problemsOf({ name: 'n', type: 'number', min: 5, max: 4 })).toEqual([
      'p.min: must not be greater than max (4), got `5`',
    ]);
    expect(problemsOf({ name: 'n', type: 'number', min: 4, max: 4 })).toEqual([]);
    expect(problemsOf({ name: 'n', type: 'number', min: -1.5 })).toEqual([]);
  });

  it('refuses bounds that are not finite numbers', () => {
    expect(problemsOf({ name: 'n', type: 'number', max: Number.POSITIVE_INFINITY })).toEqual([
      'p.max: must be a finite number, got `Infinity` (number)',
    ]);
  });

  it('requires the default to be a valid value of the parameter', () => {
    expect(problemsOf({ name: 's', type: 'string', default: 3 })).toEqual([
      'p.default: must be a string, got `3` (number)',
    ]);
    expect(problemsOf({ name: 's', type: 'string', pattern: '^v\\d+$', default: 'main' })).toEqual([
      'p.default: must match the pattern `^v\\d+$`, got `main` (string)',
    ]);
    expect(problemsOf({ name: 'n', type: 'number', min: 1, max: 3, default: 4 })).toEqual([
      'p.default: must be at most 3, got `4` (number)',
    ]);
    expect(problemsOf({ name: 'n', type: 'number', min: 1, default: 0 })).toEqual([
      'p.default: must be at least 1, got `0` (number)',
    ]);
    expect(problemsOf({ name: 'n', type: 'number', default: '1' })).toEqual([
      'p.default: must be a number, got `1` (string)',
    ]);
    expect(problemsOf({ name: 'b', type: 'boolean', default: 'true' })).toEqual([
      'p.default: must be a boolean, got `true` (string)',
    ]);
    expect(problemsOf({ name: 'e', type: 'enum', options: ['a', 'b'], default: 'c' })).toEqual([
      'p.default: must be one of `a`, `b`, got `c` (string)',
    ]);
  });

  it('does not judge the default while the definition itself is broken', () => {
    expect(problemsOf({ name: 'e', type: 'enum', default: 'a' })).toEqual([
      'p.options: must list at least one value for a parameter of type `enum`',
    ]);
  });
});

describe('parameter values', () => {
  it('tests a string pattern unanchored, as JSON Schema does', () => {
    const param: ParamDefinition = { name: 's', type: 'string', pattern: 'b' };
    expect(paramValueProblem(param, 'abc')).toBeNull();
    expect(paramValueProblem({ ...param, pattern: '^b$' }, 'abc')).not.toBeNull();
  });

  it('refuses NaN and infinities as numbers', () => {
    const param: ParamDefinition = { name: 'n', type: 'number' };
    expect(paramValueProblem(param, Number.NaN)).toBe('must be a number, got `NaN` (number)');
    expect(paramValueProblem(param, 2.5)).toBeNull();
  });

  it('accepts only the listed strings for an enum', () => {
    const param: ParamDefinition = { name: 'e', type: 'enum', options: ['1', 'b'] };
    expect(paramValueProblem(param, 'b')).toBeNull();
    expect(paramValueProblem(param, 1)).toBe('must be one of `1`, `b`, got `1` (number)');
  });
});
