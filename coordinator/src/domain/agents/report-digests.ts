import { createHash } from 'node:crypto';
import { AppError } from '../../errors.js';
import type { Agent, AgentRepository, ReportKind } from '../model/agents.js';

/**
 * The agent's reports made once per change rather than once per connect (docs/agent-protocol.md
 * §6.1). Each accepted workflows or labels report leaves the SHA-256 of its body's bytes on the
 * agent's row, written after what it reported; a reconnecting agent whose reports have not changed
 * claims the two digests when it opens its stream instead of sending both again. A coordinator
 * that lost them (a database restored from an older backup, a new database) refuses the claim and
 * the agent reports again: the claim saves two signed requests per reconnect, never a report.
 */
export async function recordReport(
  agents: AgentRepository,
  agent: Agent,
  kind: ReportKind,
  body: Buffer | undefined,
): Promise<void> {
  const digest = createHash('sha256')
    .update(body ?? Buffer.alloc(0))
    .digest('hex');
  if (agent.reportDigests[kind] !== digest) await agents.recordReportDigest(agent.id, kind, digest);
}

/** Refuses an agent's claim `<workflows digest>.<labels digest>` that is not what the coordinator holds. */
export function checkReportsClaim(agent: Agent, claim: string): void {
  const [workflows, labels] = claim.split('.');
  if (agent.reportDigests.workflows === workflows && agent.reportDigests.labels === labels) return;
  throw new AppError(
    'reports_outdated',
    'The coordinator does not hold the workflows and labels this agent last reported: report them again (PUT /v1/agent/workflows and PUT /v1/agent/labels), then reconnect.',
  );
}
