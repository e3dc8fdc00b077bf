import { DEFAULT_AGENT_QUEUE_CAPACITY } from '../agents/stream-registry.js';
import type { Repositories } from '../model/repositories.js';
import type { PoolCandidate } from '../model/trigger-runs.js';
import type { Workflow } from '../model/workflows.js';
import { checkRunFileRefs, type FileRefLookups } from '../trigger-run/file-refs.js';
import { resolveRunParams } from '../trigger-run/params.js';
import { resolveRunRequest, workflowNotFound, type RunRequest, type TriggerRunBody } from '../trigger-run/request.js';
import type { RunActor } from '../trigger-run/run-actors.js';
import type { RunTarget } from '../trigger-run/run-targets.js';
import { noMatchingAgent, selectedAgents } from './batch-runs.js';

/**
 * A run of a `fanout: one` trigger, a pool (docs/fleets.md, "Pools"), before its admission: the
 * agents its selector matches now; the candidates for the job at once (connected, reporting the
 * workflow, with the queue capacity their stream announced); and the version of the workflow the
 * params are checked against: a connected candidate's, else the one reported last. The admission
 * then gives the job to the least busy candidate with room, or lets it wait in the pool, where
 * the first matching agent with room takes it (its agent checks the params again).
 */
export async function preparePoolRun(
  repos: Pick<Repositories, 'agents' | 'workflows'>,
  files: FileRefLookups,
  target: RunTarget,
  actor: RunActor,
  request: TriggerRunBody,
): Promise<{
  run: RunRequest;
  workflow: Workflow;
  params: Record<string, unknown>;
  pool: { candidates: PoolCandidate[] };
}> {
  const { trigger } = target;
  const run = resolveRunRequest(target, request, actor);
  const agents = await selectedAgents(repos.agents, trigger);
  if (agents.length === 0) throw noMatchingAgent(trigger);
  const byAgent = new Map<string, Workflow>();
  for (const w of await repos.workflows.listActiveByAgents(agents.map((a) => a.id))) {
    if (w.name === run.workflowName) byAgent.set(w.agentId, w);
  }
  if (byAgent.size === 0) throw workflowNotFound(run.workflowName);
  const candidates: PoolCandidate[] = agents
    .filter((a) => a.status === 'connected' && byAgent.has(a.id))
    .map((a) => ({
      agentId: a.id,
      workflowId: byAgent.get(a.id)!.id,
      capacity: a.queueCapacity ?? DEFAULT_AGENT_QUEUE_CAPACITY,
    }));
  const workflow =
    candidates.length > 0
      ? byAgent.get(candidates[0]!.agentId)!
      : [...byAgent.values()].sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : -1))[0]!;
  const params = await checkRunFileRefs(
    workflow.paramsSchema,
    resolveRunParams(workflow.paramsSchema, request.params),
    actor.files,
    files,
    actor.auditActor.actorType === 'api_token' ? 'api_token' : 'member',
  );
  return { run, workflow, params, pool: { candidates } };
}
