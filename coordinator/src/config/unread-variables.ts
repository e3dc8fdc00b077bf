import { nearestName } from '@drover/shared';

/**
 * `DROVER_*` variables of the coordinator's environment that it does not read: most often a
 * misspelt setting (`DROVER_JOB_LOG_MAX_BYTE`), which would otherwise be ignored without a word
 * while the operator believes it applied. Said as warnings at start, not refused: one environment
 * (a shell, a CI job) may hold the variables of Drover's other programs too, which are left out
 * here by name.
 */

/** Variables of `drover` (the CLI), of `drover-agent` and of a job's steps (docs/cli.md, docs/agent.md, docs/workflows.md). */
const OTHER_PROGRAMS = new Set([
  'DROVER_URL',
  'DROVER_TOKEN',
  'DROVER_ORG',
  'DROVER_EMAIL',
  'DROVER_PASSWORD',
  'DROVER_MEMBER_PASSWORD',
  'DROVER_DEBUG',
  'DROVER_AGENT_LABELS',
  'DROVER_AGENT_MIN_DOWNLOAD_SPEED',
  'DROVER_AGENT_SELF_UPDATE',
  'DROVER_AGENT_STATE_DIR',
  'DROVER_JOB_ID',
  'DROVER_PARAMS_FILE',
  'DROVER_REF',
  'DROVER_WORKFLOW',
  'DROVER_WORKSPACE',
  'DROVER_OUTPUT',
]);

/** One warning per `DROVER_*` variable set in `env` that is neither in `read` nor another program's. */
export function unreadVariables(env: Record<string, string | undefined>, read: ReadonlySet<string>): string[] {
  const settings = [...read].filter((name) => name.startsWith('DROVER_'));
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('DROVER_') || read.has(name) || OTHER_PROGRAMS.has(name)) continue;
    if (name.startsWith('DROVER_PARAM_')) continue; // a step's params
    const meant = nearestName(name, settings);
    warnings.push(
      `${name} is set but is not a setting of drover-coordinator; it is ignored${meant ? ` (did you mean ${meant}?)` : ''}`,
    );
  }
  return warnings;
}
