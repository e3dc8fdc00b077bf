/**
 * Local workflow files and secrets (docs/agent-protocol.md). The daemon imports:
 * `loadWorkflows(dir)`, `watchWorkflows(dir, onChange)` and `loadSecrets(stateDir)`.
 */
export {
  loadWorkflows,
  defaultWorkflowsDir,
  isWorkflowFileName,
  MAX_WORKFLOW_FILE_BYTES,
  type LoadedWorkflow,
  type LoadedWorkflows,
  type WorkflowProblem,
} from './load-workflows.js';
export { watchWorkflows, type WatchOptions, type WorkflowWatcher } from './watch-workflows.js';
export { loadSecrets, parseSecrets, SECRETS_FILE, type LoadedSecrets } from './secrets.js';
export { KnownSecrets } from './known-secrets.js';
export { parseWorkflowFile, type ParsedWorkflowFile } from './parse-workflow.js';
export { parseDuration, formatDuration, MAX_TIMEOUT_MS } from './duration.js';
export { formatProblem } from './format-problem.js';
export type { FileProblem } from './yaml-reader.js';
