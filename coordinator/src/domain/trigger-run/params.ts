import { describeParamEnvClash, paramEnvClashes, type ParamDefinition } from '@drover/shared';
import { validationFailed, type ValidationDetail } from '../../errors.js';
import { envValueProblems, MAX_JSON_DEPTH, plainJsonProblems } from '../plain-json.js';
// With the pattern engine loaded (that module loads it).
import { runParamsProblems } from '../workflows/workflow-definitions.js';

/**
 * Trigger-run `params` against the workflow's `paramsSchema` (docs/trigger-runs.md, "Params"), with the meaning of
 * each item given in workflow-definitions.ts (types, `required`, `pattern`, `options`, `min`,
 * `max`, `default`).
 *
 * - A declared parameter that is absent takes its `default`; absent without a default, it is a
 *   422 when `required` and left out otherwise. `required` with a `default` never fails.
 * - `null` is a value like any other: it is refused for every declared type (send nothing to
 *   leave a parameter out).
 * - A workflow that declares its params (`paramsSchema` a list, even an empty one) takes only
 *   those: any other is a 422 naming it and the declared ones, so that a typo (`cod` for `code`)
 *   is not run with the default, and a name such as `SAFE` cannot reach the variable of the
 *   declared `safe` on the agent (both are `DROVER_PARAM_SAFE`).
 * - With `paramsSchema: null` (the workflow declares nothing) everything is passed through, as
 *   the spec's "arbitrary payload passed to the workflow steps", except two names that would set
 *   the same `DROVER_PARAM_<NAME>` on the agent: a 422 naming both.
 * - Whatever the schema, the payload must be plain JSON the job can store and hash
 *   (plain-json.ts): nested at most MAX_PARAMS_DEPTH levels, numbers finite.
 *
 * Every problem is reported at once, each at `params.<name>`.
 */

export const MAX_PARAMS_DEPTH = MAX_JSON_DEPTH;

/** Whether two of a schema's names set the same variable; a workflow's schema is kept (cached) between calls. */
const clashingSchemas = new WeakMap<readonly ParamDefinition[], boolean>();
function schemaHasClashes(schema: readonly ParamDefinition[]): boolean {
  let clashes = clashingSchemas.get(schema);
  if (clashes === undefined) {
    clashes = paramEnvClashes(schema.map((p) => p.name)).length > 0;
    clashingSchemas.set(schema, clashes);
  }
  return clashes;
}

/** The params to store on the job (defaults applied), or a 422 naming each bad parameter. */
export function resolveRunParams(
  schema: readonly ParamDefinition[] | null,
  params: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const given = params ?? {};
  const problems: ValidationDetail[] = [...plainJsonProblems(given, 'params'), ...envValueProblems(given, 'params')];
  if (schema === null) {
    for (const clash of paramEnvClashes(Object.keys(given))) {
      problems.push({ path: `params.${clash.name}`, message: `${describeParamEnvClash(clash)}; send only one` });
    }
    if (problems.length > 0) throw validationFailed(problems);
    return given;
  }
  // A value that is not plain JSON gets that one problem, not a second one about its name or type.
  problems.push(...runParamsProblems(schema, given, { skip: new Set(problems.map((p) => p.path)) }));
  const resolved: Record<string, unknown> = { ...given };
  for (const param of schema) {
    if (!Object.hasOwn(given, param.name) && param.default !== undefined) resolved[param.name] = param.default;
  }
  if (problems.length > 0) throw validationFailed(problems);
  // Declared names that collide (a workflow stored before such names were refused at report).
  const clashes = schemaHasClashes(schema) ? paramEnvClashes(Object.keys(resolved)) : [];
  if (clashes.length > 0) {
    throw validationFailed(
      clashes.map((clash) => ({
        path: `params.${clash.name}`,
        message: `${describeParamEnvClash(clash)}; the workflow must rename one of them`,
      })),
    );
  }
  return resolved;
}
