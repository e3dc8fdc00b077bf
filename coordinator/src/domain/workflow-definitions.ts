import { duplicateValues, paramsSchemaProblems, type WorkflowDefinition } from '@drover/shared';
import type { ValidationDetail } from '../errors.js';

/**
 * The rules of a `paramsSchema` item live in @drover/shared (shared/src/params.ts), so that the
 * agent checks its workflow files exactly as the coordinator checks the definitions it receives.
 * They are re-exported here for the coordinator's code.
 */
export { compilePattern, paramDefinitionProblems, paramsSchemaProblems, paramValueProblem } from '@drover/shared';

/**
 * Checks of an agent's workflow definitions beyond what the JSON schema can say (the schema of
 * `PutWorkflowsRequest` has already checked types, lengths and unknown fields): names unique in
 * the set, valid `paramsSchema` items, distinct `secretsKeys`.
 */
export function workflowDefinitionProblems(
  defs: readonly WorkflowDefinition[],
  path = 'body.workflows',
): ValidationDetail[] {
  const problems: ValidationDetail[] = [];
  const seen = new Map<string, number>();
  defs.forEach((def, i) => {
    const at = `${path}.${i}`;
    const first = seen.get(def.name);
    if (first === undefined) seen.set(def.name, i);
    else problems.push({ path: `${at}.name`, message: `duplicates ${path}.${first}.name \`${def.name}\`` });
    if (def.paramsSchema) problems.push(...paramsSchemaProblems(def.paramsSchema, `${at}.paramsSchema`));
    problems.push(...duplicateValues(def.secretsKeys ?? [], `${at}.secretsKeys`));
  });
  return problems;
}
