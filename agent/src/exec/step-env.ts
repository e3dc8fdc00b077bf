import { describeParamEnvClash, paramEnvClashes, paramEnvName } from '@drover/shared';

/** What every step of a job sees in its environment (docs/agent.md, "Step environment"). */
export interface JobEnvInput {
  jobId: string;
  workflowName: string;
  ref: string | null;
  debug: boolean;
  workspace: string;
  paramsFile: string;
  outputFile: string;
  params: Record<string, unknown>;
  /** The names of the params the workflow declares (its `params:`). */
  declared: readonly string[];
  /** The secrets the workflow lists, by name. */
  secrets: Record<string, string>;
}

/** A param value as an environment string: strings as they are, anything else as JSON. */
export function paramEnvValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  return JSON.stringify(value);
}

/**
 * Why the job's params cannot be given to its steps, or null: two of them would set the same
 * `DROVER_PARAM_<NAME>` (`safe` and `SAFE`). The coordinator refuses such a run (422); the agent
 * does not take its word for it, since a step that trusts a declared param's pattern would
 * otherwise run another value.
 */
export function paramEnvProblem(params: Record<string, unknown>): string | null {
  const clashes = paramEnvClashes(Object.keys(params));
  if (clashes.length === 0) return null;
  return `the params ${clashes.map(describeParamEnvClash).join('; ')}; no step was run`;
}

/**
 * The job's variables, in this order (a later one wins on a name clash): the `DROVER_*`
 * variables, one `DROVER_PARAM_<NAME>` per param the workflow does not declare, then one per
 * param it declares (so that an undeclared param never replaces a declared one's variable, even
 * if a clash got past paramEnvProblem), then each listed secret under its own name. The step's
 * own `env` is applied on top by the executor.
 */
export function jobEnv(input: JobEnvInput): Record<string, string> {
  const env: Record<string, string> = {
    DROVER_JOB_ID: input.jobId,
    DROVER_WORKFLOW: input.workflowName,
    DROVER_REF: input.ref ?? '',
    DROVER_DEBUG: input.debug ? '1' : '0',
    DROVER_WORKSPACE: input.workspace,
    DROVER_PARAMS_FILE: input.paramsFile,
    DROVER_OUTPUT: input.outputFile,
  };
  const declared = new Set(input.declared);
  const params = Object.entries(input.params);
  for (const [name, value] of params) if (!declared.has(name)) env[paramEnvName(name)] = paramEnvValue(value);
  for (const [name, value] of params) if (declared.has(name)) env[paramEnvName(name)] = paramEnvValue(value);
  for (const [name, value] of Object.entries(input.secrets)) env[name] = value;
  return env;
}
