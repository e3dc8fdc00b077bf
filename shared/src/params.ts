import { compilePattern, PatternBudget, PatternSet, MAX_RUN_PATTERN_WORK } from './pattern-match.js';
import { describeValue } from './describe.js';
import { fileRefProblem } from './file-refs.js';
import { describeParamEnvClash, paramEnvClashes, paramEnvName } from './param-env.js';
import type { ParamDefinition } from './wire.js';

/**
 * The meaning of a workflow's `paramsSchema` items, shared by the coordinator (which checks the
 * definitions an agent reports and validates trigger-run params) and the agent (which checks its
 * workflow files before reporting them), so that both agree on what a valid definition is.
 *
 * - `string`: `pattern` (optional) is a regular expression in RE2 syntax (pattern-match.ts), tested
 *   unanchored, as JSON Schema's `pattern` is (write `^...$` to match the whole value).
 * - `number`: any finite number; `min` and `max` (optional) are inclusive bounds.
 * - `boolean`: true or false.
 * - `enum`: one of `options`, a non-empty list of distinct strings.
 * - `file`: a FileRef `{__type: 'FileRef', id}` naming a stored file (file-refs.ts); no keyword
 *   applies and it has no `default`.
 * A keyword that does not belong to the item's type (`options` on a string, `pattern` on a
 * number, `min` on a boolean...) is refused rather than ignored, so a typo cannot silently turn
 * a check off. `default`, when given, must itself be a valid value.
 *
 * The JSON schema `ParamDefinition` (wire.ts) has already checked types, lengths and unknown keys.
 */

/** One problem: where (a dotted path such as `body.workflows.0.paramsSchema.1.min`) and what. */
export interface ParamProblem {
  path: string;
  message: string;
}

/**
 * `patterns`: the workflow set's patterns (its limits span every workflow an agent reports); a
 * fresh set checks one workflow alone.
 */
export function paramsSchemaProblems(
  params: readonly ParamDefinition[],
  path: string,
  patterns: PatternSet = new PatternSet(),
): ParamProblem[] {
  const problems: ParamProblem[] = [];
  const seen = new Map<string, number>();
  params.forEach((param, i) => {
    const at = `${path}.${i}`;
    const first = seen.get(param.name);
    if (first === undefined) seen.set(param.name, i);
    else problems.push({ path: `${at}.name`, message: `duplicates ${path}.${first}.name \`${param.name}\`` });
    problems.push(...paramDefinitionProblems(param, at, patterns));
  });
  // Two names that would set the same DROVER_PARAM_<NAME> (`a-b` and `a_b`, `safe` and `SAFE`).
  for (const clash of paramEnvClashes(params.map((p) => p.name))) {
    problems.push({ path: `${path}.${clash.index}.name`, message: `${describeParamEnvClash(clash)}; rename one` });
  }
  return problems;
}

const KEYWORDS_BY_TYPE: Record<ParamDefinition['type'], ReadonlySet<'pattern' | 'options' | 'min' | 'max'>> = {
  string: new Set(['pattern']),
  number: new Set(['min', 'max']),
  boolean: new Set(),
  enum: new Set(['options']),
  file: new Set(),
};

export function paramDefinitionProblems(
  param: ParamDefinition,
  at: string,
  patterns: PatternSet = new PatternSet(),
): ParamProblem[] {
  const problems: ParamProblem[] = [];
  for (const keyword of ['pattern', 'options', 'min', 'max'] as const) {
    if (param[keyword] !== undefined && !KEYWORDS_BY_TYPE[param.type].has(keyword)) {
      problems.push({ path: `${at}.${keyword}`, message: `does not apply to a parameter of type \`${param.type}\`` });
    }
  }
  if (param.pattern !== undefined && param.type === 'string') {
    const compiled = patterns.compile(param.pattern);
    if (!compiled.ok) {
      problems.push({ path: `${at}.pattern`, message: `${compiled.problem}; got ${describeValue(param.pattern)}` });
    }
  }
  if (param.type === 'enum') {
    if (!param.options || param.options.length === 0) {
      problems.push({ path: `${at}.options`, message: 'must list at least one value for a parameter of type `enum`' });
    } else {
      problems.push(...duplicateValues(param.options, `${at}.options`));
    }
  }
  for (const bound of ['min', 'max'] as const) {
    const value = param[bound];
    if (value !== undefined && !Number.isFinite(value)) {
      problems.push({ path: `${at}.${bound}`, message: `must be a finite number, got ${describeValue(value)}` });
    }
  }
  if (param.min !== undefined && param.max !== undefined && param.min > param.max) {
    problems.push({ path: `${at}.min`, message: `must not be greater than max (${param.max}), got \`${param.min}\`` });
  }
  if (param.type === 'file' && param.default !== undefined) {
    problems.push({
      path: `${at}.default`,
      message: 'does not apply to a parameter of type `file` (a file has no default)',
    });
  }
  if (param.default !== undefined && problems.length === 0) {
    const problem = paramValueProblem(param, param.default);
    if (problem) problems.push({ path: `${at}.default`, message: problem });
  }
  return problems;
}

/**
 * Why `value` is not acceptable for `param` ("must be ..., got ..."), or null when it is. Used for
 * `default` here, for trigger-run params and by the dashboard's run form, so all agree on what a
 * value is. `budget`: what the run may still spend on patterns (a fresh one checks one value).
 * A pattern needs loadPatternEngine() done.
 */
export function paramValueProblem(
  param: ParamDefinition,
  value: unknown,
  budget: PatternBudget = new PatternBudget(),
): string | null {
  switch (param.type) {
    case 'string': {
      if (typeof value !== 'string') return `must be a string, got ${describeValue(value)}`;
      if (param.pattern === undefined) return null;
      return patternProblem(param.pattern, value, budget);
    }
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return `must be a number, got ${describeValue(value)}`;
      if (param.min !== undefined && value < param.min)
        return `must be at least ${param.min}, got ${describeValue(value)}`;
      if (param.max !== undefined && value > param.max)
        return `must be at most ${param.max}, got ${describeValue(value)}`;
      return null;
    }
    case 'boolean':
      return typeof value === 'boolean' ? null : `must be a boolean, got ${describeValue(value)}`;
    case 'enum': {
      const options = param.options ?? [];
      if (typeof value === 'string' && options.includes(value)) return null;
      return `must be one of ${options.map((o) => `\`${o}\``).join(', ')}, got ${describeValue(value)}`;
    }
    case 'file':
      return fileRefProblem(value);
  }
}

/**
 * Why `value` does not match `pattern`, or null when it does. A pattern the engine refuses (a
 * workflow stored before patterns were RE2: a lookahead, a backreference...) cannot check
 * anything, so the value is refused, saying that the workflow must change; so is a value that
 * would take more than what is left of the run's budget.
 */
export function patternProblem(source: string, value: string, budget: PatternBudget): string | null {
  const compiled = compilePattern(source);
  if (!compiled.ok) {
    return (
      `cannot be checked: the workflow's pattern \`${source}\` ${compiled.problem}; ` +
      'the workflow must change it, and its agent report it again (docs/agent.md, "Param patterns")'
    );
  }
  const { pattern } = compiled;
  if (!budget.take(pattern, value)) {
    return (
      `is too long to check against the pattern \`${source}\`: ${value.length} characters × ` +
      `${pattern.instructions} instructions, more than what is left of the ${MAX_RUN_PATTERN_WORK} a run may spend on patterns`
    );
  }
  return pattern.test(value) ? null : `must match the pattern \`${source}\`, got ${describeValue(value)}`;
}

/** Problems for values repeated in a list (`path.<i>`: duplicates an earlier value ...). */
export function duplicateValues(values: readonly string[], path: string): ParamProblem[] {
  const seen = new Set<string>();
  const problems: ParamProblem[] = [];
  values.forEach((value, i) => {
    if (seen.has(value))
      problems.push({ path: `${path}.${i}`, message: `duplicates an earlier value ${describeValue(value)}` });
    seen.add(value);
  });
  return problems;
}

/** Describes a value for "expected X, got Y" messages (the coordinator's `describe`, errors.ts). */

/**
 * The problems of a run's params (`given`) against a workflow's declared ones (`schema`), each at
 * `params.<name>` (docs/trigger-runs.md, "Params"): a param the workflow does not declare (naming
 * the declared one whose variable it would set too), a required one absent without a `default`,
 * a value its declaration refuses; the patterns of one run share one budget. The coordinator
 * refuses a call with them (422) against the definition its agent reported; the agent refuses a
 * job with them against its own workflow file, which is what runs (`files: false`: the values of
 * `file` params are not checked there, the coordinator made them download references).
 * `skip`: paths refused for another reason already, which get no second problem.
 */
export function runParamsProblems(
  schema: readonly ParamDefinition[],
  given: Readonly<Record<string, unknown>>,
  options: { skip?: ReadonlySet<string>; files?: boolean } = {},
): ParamProblem[] {
  const skip = options.skip ?? new Set<string>();
  const problems = undeclaredProblems(schema, given).filter((p) => !skip.has(p.path));
  // What the run's values may cost their patterns, in all (pattern-match.ts).
  const budget = new PatternBudget();
  for (const param of schema) {
    const path = `params.${param.name}`;
    if (!Object.hasOwn(given, param.name)) {
      if (param.default === undefined && param.required === true) {
        problems.push({ path, message: `is required (${expectedValue(param)})` });
      }
      continue;
    }
    if (skip.has(path) || (param.type === 'file' && options.files === false)) continue;
    const problem = paramValueProblem(param, given[param.name], budget);
    if (problem) problems.push({ path, message: problem });
  }
  return problems;
}

/** How many declared names an "is not declared" message lists at most. */
const LISTED_NAMES = 20;

/** A problem for each given param the schema does not declare, naming the declared one it collides with. */
function undeclaredProblems(
  schema: readonly ParamDefinition[],
  given: Readonly<Record<string, unknown>>,
): ParamProblem[] {
  // Every given name is usually declared: find out before building the messages' parts.
  const undeclared = Object.keys(given).filter((name) => !schema.some((p) => p.name === name));
  if (undeclared.length === 0) return [];
  const byEnv = new Map(schema.map((p) => [paramEnvName(p.name), p.name]));
  const names = schema.map((p) => `\`${p.name}\``);
  const listed =
    names.length === 0
      ? 'the workflow declares no params'
      : `the workflow's params are ${names.slice(0, LISTED_NAMES).join(', ')}` +
        (names.length > LISTED_NAMES ? ` and ${names.length - LISTED_NAMES} more` : '');
  const problems: ParamProblem[] = [];
  for (const name of undeclared) {
    const env = paramEnvName(name);
    const twin = byEnv.get(env);
    problems.push({
      path: `params.${name}`,
      message:
        twin === undefined
          ? `is not a parameter of this workflow (${listed})`
          : `is not a parameter of this workflow, and ${describeParamEnvClash({ name, first: twin, env })}; send \`${twin}\` only`,
    });
  }
  return problems;
}

/** What a value of this parameter must be, for "is required" messages. */
function expectedValue(param: ParamDefinition): string {
  switch (param.type) {
    case 'enum':
      return `one of ${(param.options ?? []).map((o) => `\`${o}\``).join(', ')}`;
    case 'string':
      return param.pattern === undefined ? 'a string' : `a string matching \`${param.pattern}\``;
    case 'file':
      return 'a FileRef `{"__type": "FileRef", "id": "<file id>"}`';
    default:
      return `a ${param.type}`;
  }
}
