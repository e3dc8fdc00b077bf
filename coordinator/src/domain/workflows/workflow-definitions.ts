import {
  duplicateValues,
  loadPatternEngine,
  paramsSchemaProblems,
  PatternSet,
  type WorkflowDefinition,
} from '@drover/shared';
import type { ValidationDetail } from '../../errors.js';
import { storableText } from '../jobs/storable-text.js';

/**
 * The rules of a `paramsSchema` item live in @drover/shared (shared/src/params.ts), so that the
 * agent checks its workflow files exactly as the coordinator checks the definitions it receives.
 * They are re-exported here for the coordinator's code.
 */
export { paramDefinitionProblems, paramsSchemaProblems, paramValueProblem, runParamsProblems } from '@drover/shared';

// The coordinator checks patterns at every report and at every run: the engine (re2js, which
// the agent and the dashboard load only when a pattern needs it) is loaded with this module.
await loadPatternEngine();

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
  // The limits on patterns span the whole set (shared/src/pattern-match.ts).
  const patterns = new PatternSet();
  defs.forEach((def, i) => {
    const at = `${path}.${i}`;
    const first = seen.get(def.name);
    if (first === undefined) seen.set(def.name, i);
    else problems.push({ path: `${at}.name`, message: `duplicates ${path}.${first}.name \`${def.name}\`` });
    if (def.paramsSchema) problems.push(...paramsSchemaProblems(def.paramsSchema, `${at}.paramsSchema`, patterns));
    problems.push(...duplicateValues(def.secretsKeys ?? [], `${at}.secretsKeys`));
  });
  return problems;
}

/**
 * The definitions as both databases store them: a NUL character (U+0000) in a description or a
 * version, the workflow's columns of text, becomes U+FFFD, as in the agent's log lines
 * (storable-text.ts). PostgreSQL's text cannot hold one: it refused the agent's whole set with a
 * message naming no workflow, where SQLite stored it. The rest of a definition is stored as JSON,
 * which keeps the character escaped.
 */
export function storableDefinitions(defs: readonly WorkflowDefinition[]): WorkflowDefinition[] {
  const storable = (text: string | null | undefined) => (typeof text === 'string' ? storableText(text) : text);
  return defs.map((def) => {
    const description = storable(def.description);
    const version = storable(def.version);
    return description === def.description && version === def.version ? def : { ...def, description, version };
  });
}
