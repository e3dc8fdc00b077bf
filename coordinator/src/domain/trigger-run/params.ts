import { patternProblem, type ParamDefinition } from '@drover/shared';
import { validationFailed, type ValidationDetail } from '../../errors.js';
import { MAX_JSON_DEPTH, plainJsonProblems } from '../plain-json.js';
import { compilePattern, paramValueProblem } from '../workflow-definitions.js';

/**
 * Trigger-run `params` against the workflow's `paramsSchema` (docs/trigger-runs.md, "Params"), with the meaning of
 * each item given in workflow-definitions.ts (types, `required`, `pattern`, `options`, `min`,
 * `max`, `default`).
 *
 * - A declared parameter that is absent takes its `default`; absent without a default, it is a
 *   422 when `required` and left out otherwise. `required` with a `default` never fails.
 * - `null` is a value like any other: it is refused for every declared type (send nothing to
 *   leave a parameter out).
 * - Parameters the schema does not declare are kept as sent: the spec calls `params` an
 *   "arbitrary payload passed to the workflow steps". With `paramsSchema: null` everything is
 *   passed through.
 * - Whatever the schema, the payload must be plain JSON the job can store and hash
 *   (plain-json.ts): nested at most MAX_PARAMS_DEPTH levels, numbers finite.
 *
 * Every problem is reported at once, each at `params.<name>`.
 */

export const MAX_PARAMS_DEPTH = MAX_JSON_DEPTH;

/** The params to store on the job (defaults applied), or a 422 naming each bad parameter. */
export function resolveRunParams(
  schema: readonly ParamDefinition[] | null,
  params: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const given = params ?? {};
  const problems: ValidationDetail[] = plainJsonProblems(given, 'params');
  if (schema === null || schema.length === 0) {
    if (problems.length > 0) throw validationFailed(problems);
    return given;
  }
  const resolved: Record<string, unknown> = { ...given };
  for (const param of schema) {
    const path = `params.${param.name}`;
    if (!Object.hasOwn(given, param.name)) {
      if (param.default !== undefined) resolved[param.name] = param.default;
      else if (param.required === true) problems.push({ path, message: `is required (${expected(param)})` });
      continue;
    }
    const problem = valueProblem(param, given[param.name]);
    if (problem) problems.push({ path, message: problem });
  }
  if (problems.length > 0) throw validationFailed(problems);
  return resolved;
}

/** What a value of this parameter must be, for "is required" messages. */
function expected(param: ParamDefinition): string {
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

/** Compiled patterns, kept so that a hot trigger does not recompile its regular expressions per call. */
const patterns = new Map<string, RegExp | null>();
const MAX_CACHED_PATTERNS = 1000;

function valueProblem(param: ParamDefinition, value: unknown): string | null {
  if (param.type === 'string' && typeof value === 'string' && param.pattern !== undefined) {
    let regexp = patterns.get(param.pattern);
    if (regexp === undefined) {
      if (patterns.size >= MAX_CACHED_PATTERNS) patterns.clear();
      regexp = compilePattern(param.pattern);
      patterns.set(param.pattern, regexp);
    }
    return patternProblem(param.pattern, regexp, value);
  }
  return paramValueProblem(param, value);
}
