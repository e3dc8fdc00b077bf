import type { FileProblem } from './yaml-reader.js';

/** `deploy.yaml:7: steps[1].timeout: expected ...` (the file, the line when known, the message). */
export function formatProblem(problem: FileProblem): string {
  return `${problem.file}${problem.line ? `:${problem.line}` : ''}: ${problem.message}`;
}
