import { DEFAULT_AGENT_QUEUE_CAPACITY } from '../agents/stream-registry.js';
import type { Repositories } from '../model/repositories.js';
import type { PoolCandidate } from '../model/trigger-runs.js';
import type { Workflow } from '../model/workflows.js';
import { checkRunFileRefs, type FileRefLookups } from '../trigger-run/file-refs.js';
import { resolveRunParams } from '../trigger-run/params.js';
import { AppError } from '../../errors.js';
import { resolveRunRequest, type RunRequest, type TriggerRunBody } from '../trigger-run/request.js';
import type { RunActor } from '../trigger-run/run-actors.js';
import type { RunTarget } from '../trigger-run/run-targets.js';
import { noMatchingAgent, selectedAgents } from './batch-runs.js';

/**
 * A run of a `fanout: one` trigger, a pool (docs/fleets.md, "Pools"), before its admission: the
 * agents its selector matches now; the version of the workflow the params are checked against:
 * the first connected candidate's, else the one reported last; and the candidates for the job at
 * once (connected, reporting the workflow in a version that takes the params, with the queue
 * capacity their stream announced, and the params and timeout of their version). The admission
 * then gives the job to the least busy candidate with room, or lets it wait in the pool, where
 * the first matching agent with room whose version takes its params claims it (pool-service.ts;
 * its agent checks the params again).
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
  if (byAgent.size === 0) {
    throw new AppError(
      'not_found',
      `Workflow \`${run.workflowName}\` is not reported by any agent the selector \`${trigger.agentSelector}\` matches`,
    );
  }
  const connected = agents.filter((a) => a.status === 'connected' && byAgent.has(a.id));
  const workflow =
    connected.length > 0
      ? byAgent.get(connected[0]!.id)!
      : [...byAgent.values()].sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : -1))[0]!;
  // The params as each version of the workflow among the connected candidates takes them (most
  // pools have one): the version above refuses with a 422; another that refuses leaves its agents
  // out, as they would refuse the job.
  const resolve = (w: Workflow) =>
    checkRunFileRefs(
      w.paramsSchema,
      resolveRunParams(w.paramsSchema, request.params),
      actor.files,
      files,
      actor.auditActor.actorType === 'api_token' ? 'api_token' : 'member',
    );
  const params = await resolve(workflow);
  const versions = new Map<string, Record<string, unknown> | null>([[JSON.stringify(workflow.paramsSchema), params]]);
  const candidates: PoolCandidate[] = [];
  for (const agent of connected) {
    const version = byAgent.get(agent.id)!;
    const key = JSON.stringify(version.paramsSchema);
    if (!versions.has(key)) {
      try {
        versions.set(key, await resolve(version));
      } catch (error) {
        if (!(error instanceof AppError) || error.code !== 'validation_failed') throw error;
        versions.set(key, null);
      }
    }
    const taken = versions.get(key);
    if (!taken) continue;
    candidates.push({
      agentId: agent.id,
      workflowId: version.id,
      capacity: agent.queueCapacity ?? DEFAULT_AGENT_QUEUE_CAPACITY,
      params: taken,
      timeoutMs: version.timeoutMs,
    });
  }
  return { run, workflow, params, pool: { candidates } };
}
