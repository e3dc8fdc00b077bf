import { showControls } from '@drover/shared';
import type { FileProblem } from './yaml-reader.js';

/**
 * `deploy.yaml:7: steps[1].timeout: expected ...` (the file, the line when known, the message), on
 * one line, control characters shown as `\xHH`: a file's name may hold anything but `/`, an escape
 * sequence a terminal would obey or a line break that would pass for another problem.
 */
export function formatProblem(problem: FileProblem): string {
  return showControls(`${problem.file}${problem.line ? `:${problem.line}` : ''}: ${problem.message}`, {
    lineBreaks: false,
  });
}

/**
 * How many workflow files were skipped, counting each file once however many problems it has:
 * `1 invalid file skipped`, `4 invalid files skipped (5 problems)`.
 */
export function describeInvalidFiles(problems: readonly { file: string }[]): string {
  const files = new Set(problems.map((p) => p.file)).size;
  const counted = `${files} invalid file${files === 1 ? '' : 's'} skipped`;
  return problems.length === files ? counted : `${counted} (${problems.length} problems)`;
}
