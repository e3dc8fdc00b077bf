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
  /** The secrets the workflow lists, by name. */
  secrets: Record<string, string>;
}

/** `DROVER_PARAM_<NAME>`: the name upper-cased, anything not a letter or digit turned into `_`. */
export function paramEnvName(name: string): string {
  return `DROVER_PARAM_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** A param value as an environment string: strings as they are, anything else as JSON. */
export function paramEnvValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  return JSON.stringify(value);
}

/**
 * The job's variables, in this order (a later one wins on a name clash): the `DROVER_*`
 * variables, one `DROVER_PARAM_<NAME>` per param, then each listed secret under its own name.
 * The step's own `env` is applied on top by the executor.
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
  for (const [name, value] of Object.entries(input.params)) env[paramEnvName(name)] = paramEnvValue(value);
  for (const [name, value] of Object.entries(input.secrets)) env[name] = value;
  return env;
}
