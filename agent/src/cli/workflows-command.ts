import path from 'node:path';
import { showControls, showControlsInJson } from '@drover/shared';
import type { Command } from 'commander';
import { AgentError } from '../errors.js';
import { createMasker, maskDeep, shortSecretWarning } from '../exec/secret-masker.js';
import { currentUid, ownerOf, userLabel } from '../state/owner.js';
import { givenDir, stateDirOf } from '../state/paths.js';
import { formatDuration } from '../workflows/duration.js';
import { describeInvalidFiles, formatProblem } from '../workflows/format-problem.js';
import type { LoadedWorkflow } from '../workflows/load-workflows.js';
import type { FileProblem } from '../workflows/yaml-reader.js';
import { CliExit, type CliIo } from './io.js';

interface WorkflowsFlags {
  stateDir?: string;
  workflowsDir?: string;
  json?: boolean;
}

export function configureWorkflowsCommand(program: Command, io: CliIo): void {
  program
    .command('workflows')
    .description('check and list the local workflow files (exits 1 when a file is invalid)')
    .option('--state-dir <dir>', 'the agent state directory (env DROVER_AGENT_STATE_DIR)')
    .option('--workflows-dir <dir>', 'where the workflow files are (default: <state-dir>/workflows)')
    .option('--json', 'print the workflows and problems as JSON')
    .action(async (flags: WorkflowsFlags) => {
      // The YAML parser is loaded by the commands that read YAML, not at every start.
      const [{ defaultWorkflowsDir, inspectingAgentUid, loadWorkflows }, { loadSecrets }] = await Promise.all([
        import('../workflows/load-workflows.js'),
        import('../workflows/secrets.js'),
      ]);
      const stateDir = stateDirOf(flags.stateDir);
      const dir = path.resolve(
        flags.workflowsDir === undefined
          ? defaultWorkflowsDir(stateDir)
          : givenDir('--workflows-dir', flags.workflowsDir),
      );
      // As root, the files are judged as the agent (the state directory's owner) would judge them.
      const loaded = await loadWorkflows(dir, { agentUid: await inspectingAgentUid(stateDir, dir) });
      if (loaded.deniedDirectory) {
        // Not "no valid workflows, 1 invalid file": the files are there, this user may not read
        // them (the service's state directory is 0700), as `drover-agent logs` says of the log.
        const owner = ownerOf(dir);
        const as = owner === null || owner === currentUid() ? '' : ` or as ${userLabel(owner)}`;
        throw new AgentError('bad_state', `cannot read ${dir}: permission denied (run it with sudo${as})`);
      }
      const secrets = await loadSecrets(stateDir);
      const warnings = secretWarnings(loaded.workflows, secrets);
      // A problem repeats the value it found: a secret's is masked, as in the agent's log and status
      // (this output goes to provisioning scripts' logs and support tickets).
      const mask = createMasker(Object.values(secrets.secrets));

      if (flags.json) {
        // File names and values are printed as the files have them: escape sequences in them shown, never obeyed.
        const shown = maskDeep(
          {
            directory: dir,
            missingDirectory: loaded.missingDirectory === true,
            workflows: loaded.workflows,
            problems: loaded.problems,
            warnings,
          },
          mask,
        );
        io.out(`${showControlsInJson(JSON.stringify(shown, null, 2))}\n`);
      } else {
        io.out(`${mask(report(dir, loaded.workflows, loaded.problems, warnings, loaded.missingDirectory))}\n`);
      }
      if (loaded.problems.length > 0) throw new CliExit(1);
    });
}

/**
 * What will go wrong at run time although the files are valid: secrets that are missing or
 * refused, and values too short to be masked in the logs.
 */
function secretWarnings(
  workflows: LoadedWorkflow[],
  secrets: { secrets: Record<string, string>; problem?: string },
): string[] {
  const warnings: string[] = [];
  const short = shortSecretWarning(secrets.secrets);
  if (short) warnings.push(short);
  const needed = workflows.filter((w) => (w.definition.secretsKeys ?? []).length > 0);
  if (needed.length === 0) return warnings;
  if (secrets.problem) return [...warnings, `secrets: ${secrets.problem}`];
  for (const w of needed) {
    const missing = (w.definition.secretsKeys ?? []).filter((name) => !(name in secrets.secrets));
    if (missing.length > 0) {
      warnings.push(
        `${w.file}: the secret${missing.length > 1 ? 's' : ''} ${missing.map((m) => `\`${m}\``).join(', ')} ` +
          `${missing.length > 1 ? 'are' : 'is'} not in secrets.yaml; jobs of \`${w.definition.name}\` will fail until added`,
      );
    }
  }
  return warnings;
}

function report(
  dir: string,
  workflows: LoadedWorkflow[],
  problems: FileProblem[],
  warnings: string[],
  missing: boolean | undefined,
): string {
  const where = oneLine(dir);
  if (missing) {
    return `No workflows directory at ${where}: create it and put one workflow per .yaml file in it (see docs/agent.md).`;
  }
  const lines: string[] = [];
  if (workflows.length === 0) lines.push(`No valid workflows in ${where}.`);
  else {
    lines.push(`${workflows.length} workflow${workflows.length === 1 ? '' : 's'} in ${where}:`, '');
    const rows = workflows.map(({ file, definition: d }) => [
      d.name,
      d.version ?? '-',
      d.paramsSchema?.length ? d.paramsSchema.map((p) => `${p.name}${p.required ? '*' : ''}:${p.type}`).join(' ') : '-',
      `${d.steps.length} step${d.steps.length === 1 ? '' : 's'}`,
      d.timeout ? formatDuration(d.timeout) : '-',
      file,
    ]);
    lines.push(
      ...table([['NAME', 'VERSION', 'PARAMS', 'STEPS', 'TIMEOUT', 'FILE'], ...rows.map((r) => r.map(oneLine))]),
    );
  }
  if (problems.length > 0) {
    lines.push('', `${describeInvalidFiles(problems)}:`, ...problems.map((p) => `  ${formatProblem(p)}`));
  }
  if (warnings.length > 0) lines.push('', 'Warnings:', ...warnings.map((w) => `  ${oneLine(w)}`));
  return lines.join('\n');
}

/**
 * Text from the files (their names, versions) as one line of the terminal: a control character
 * shown as `\xHH`, so that an escape sequence in a file's name is not obeyed, and a line break
 * in it does not break the table.
 */
const oneLine = (text: string): string => showControls(text, { lineBreaks: false });

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => `  ${r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')}`);
}
