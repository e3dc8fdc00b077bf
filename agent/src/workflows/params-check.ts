import { runParamsProblems, type WorkflowDefinition } from '@drover/shared';

/** How many problems a refusal names; the rest are counted. */
const LISTED = 5;

/**
 * Why a job's params do not fit the workflow file on this agent, or null when they do (or the
 * file declares no params: it takes any payload). The coordinator checked them against the
 * definition this agent reported, but the file is what runs, and may have changed since; and a
 * coordinator broken into must not hand a step a value the file refuses (a value a pattern keeps
 * out of a shell command, say). The same rules as the coordinator's (runParamsProblems), but for
 * the values of `file` params, which the coordinator turned into download references.
 */
export function paramsProblem(
  workflow: WorkflowDefinition | undefined,
  params: Readonly<Record<string, unknown>>,
): string | null {
  if (!workflow?.paramsSchema) return null;
  const problems = runParamsProblems(workflow.paramsSchema, params, { files: false });
  if (problems.length === 0) return null;
  const listed = problems.slice(0, LISTED).map((p) => `${p.path} ${p.message}`);
  const more = problems.length > LISTED ? ` (and ${problems.length - LISTED} more)` : '';
  return `the params do not fit the workflow file on this agent: ${listed.join('; ')}${more}`;
}
