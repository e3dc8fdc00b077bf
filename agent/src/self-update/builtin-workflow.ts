import type { WorkflowDefinition } from '@drover/shared';

/** The name of the update workflow built into the agent (docs/agent.md, "Self-update"). */
export const SELF_UPDATE_WORKFLOW = 'drover-agent-update';

/**
 * The exit code of an agent that stops to be started again as another binary (self-update, or
 * its rollback): non-zero, so systemd's `Restart=on-failure` (and `always`) starts the unit again.
 * 75 is EX_TEMPFAIL of sysexits.h: "try again later".
 */
export const RESTART_EXIT_CODE = 75;

/** How long the built-in update may take, download included (the coordinator's job deadline). */
const UPDATE_TIMEOUT_MS = 3_600_000;

/**
 * The built-in workflow as the agent reports it to the coordinator with its workflow files. Its
 * steps describe what the agent does itself, in its own process: they are never run as commands,
 * and a trigger job of this workflow is refused (it runs only as an application's update
 * workflow, with an artifact the signed manifest vouches for).
 */
export function selfUpdateWorkflow(deadlineMs: number): WorkflowDefinition {
  const seconds = Math.round(deadlineMs / 1000);
  return {
    name: SELF_UPDATE_WORKFLOW,
    description:
      'Built into drover-agent: installs a new drover-agent binary delivered over the air (the release artifact), ' +
      'restarts into it and goes back to the previous binary unless the new one connects to the coordinator in time',
    version: '1',
    paramsSchema: null,
    timeout: UPDATE_TIMEOUT_MS,
    steps: [
      { name: 'check the new binary', run: '<artifact> --version' },
      { name: 'swap', run: 'keep the running binary as <executable>.previous, rename the new one over <executable>' },
      {
        name: 'restart',
        run: `exit ${RESTART_EXIT_CODE}: the service manager (systemd Restart=) starts the new binary`,
      },
      {
        name: 'confirm or roll back',
        run: `the new binary must connect within ${seconds}s, else <executable>.previous is put back`,
      },
    ],
  };
}
