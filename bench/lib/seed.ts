import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { newTimeOrderedId, type Coordinator } from '@drover/coordinator';
import type { WorkflowDefinition } from '@drover/shared';

/**
 * Fixtures written straight through the coordinator's repositories: fast, and independent of
 * the management routes, so a benchmark measures only the route under test.
 */

/** The async `deploy` workflow the trigger-run benchmarks run (its parameters validated on each call). */
export const DEPLOY_WORKFLOW: WorkflowDefinition = {
  name: 'deploy',
  description: 'deploys a release',
  version: '1.0.0',
  paramsSchema: [
    { name: 'env', type: 'enum', options: ['staging', 'prod'], required: true },
    { name: 'replicas', type: 'number', min: 1, max: 10, default: 2 },
    { name: 'dryRun', type: 'boolean', default: false },
  ],
  secretsKeys: [],
  timeout: 600_000,
  steps: [{ run: './deploy.sh', args: ['--env', 'staging'] }],
};

export interface SeededAgent {
  id: string;
  workflowNames: string[];
}

/** Enrolls `count` agents (oldest first), each reporting `workflowsPerAgent` workflows. */
export async function seedAgents(
  coordinator: Coordinator,
  orgId: string,
  { count, workflowsPerAgent }: { count: number; workflowsPerAgent: number },
): Promise<SeededAgent[]> {
  const agents: SeededAgent[] = [];
  for (let i = 0; i < count; i++) {
    const workflowNames = Array.from({ length: workflowsPerAgent }, (_, w) => `workflow-${w}`);
    const id = await seedAgent(
      coordinator,
      orgId,
      i,
      workflowNames.map((name) => ({
        name,
        description: `${name} on edge-${i}`,
        version: '1.0.0',
        paramsSchema: [{ name: 'ref', type: 'string' as const, required: true }],
        secretsKeys: ['DEPLOY_KEY'],
        steps: [{ run: 'echo', args: ['hello'] }],
      })),
    );
    agents.push({ id, workflowNames });
  }
  return agents;
}

/**
 * Enrolls one agent named `edge-<nn>` (with a random public key: it can never sign, so it never
 * connects) reporting these workflows, whose rate limits stay null. Returns its id.
 */
export async function seedAgent(
  coordinator: Coordinator,
  orgId: string,
  index: number,
  workflows: readonly WorkflowDefinition[],
): Promise<string> {
  const { repos } = coordinator.ctx;
  const at = new Date().toISOString();
  const tokenHash = randomBytes(32).toString('hex');
  await repos.enrollmentTokens.insert(enrollmentTokenRow(orgId, at), tokenHash);
  const id = newTimeOrderedId(Date.now()); // as the coordinator's enrollment makes it
  const outcome = await repos.agents.enroll(
    tokenHash,
    {
      id,
      name: `edge-${String(index).padStart(2, '0')}`,
      hostname: `edge-${index}.bench.local`,
      os: 'linux 6.8.0',
      agentVersion: '0.1.0',
      publicKey: randomBytes(32).toString('base64'),
    },
    at,
  );
  if (!outcome.ok) throw new Error(`seed agent: ${outcome.reason}`);
  await repos.workflows.replaceForAgent(orgId, id, workflows, at);
  return id;
}

function enrollmentTokenRow(orgId: string, at: string) {
  return {
    id: randomUUID(),
    orgId,
    name: null,
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    usedAt: null,
    usedByAgentId: null,
    createdBy: null,
    createdAt: at,
  };
}

/**
 * Stores an enrollment token and returns its plaintext (`drve_...`), for a real agent process
 * to enroll with (`drover-agent enroll`). The stored hash is SHA-256 hex of the plaintext.
 */
export async function seedEnrollmentToken(coordinator: Coordinator, orgId: string): Promise<string> {
  const plaintext = `drve_${randomBytes(32).toString('base64url')}`;
  await coordinator.ctx.repos.enrollmentTokens.insert(
    enrollmentTokenRow(orgId, new Date().toISOString()),
    createHash('sha256').update(plaintext, 'utf8').digest('hex'),
  );
  return plaintext;
}

export interface BenchTrigger {
  agentId: string;
  workflowName: string;
  responseMode: 'async' | 'sync';
  /** Default 30000 (the spec's default). */
  responseTimeoutMs?: number;
}

/**
 * Stores a webhook trigger scoped to one workflow of an agent (no allowed refs, debug allowed,
 * no notification). Returns its id.
 */
export async function seedTrigger(
  coordinator: Coordinator,
  orgId: string,
  userId: string,
  options: BenchTrigger,
): Promise<string> {
  const id = randomUUID();
  const at = new Date().toISOString();
  await coordinator.ctx.repos.triggers.insert({
    id,
    orgId,
    name: `bench ${options.workflowName} (${options.responseMode})`,
    type: 'webhook',
    agentId: options.agentId,
    agentSelector: null,
    fanout: null,
    maxParallel: null,
    scopeType: 'workflow',
    workflowName: options.workflowName,
    responseMode: options.responseMode,
    responseTimeoutMs: options.responseTimeoutMs ?? 30_000,
    allowedRefs: null,
    allowDebug: true,
    notifyProvider: null,
    notifyTeamId: null,
    notifyChannelId: null,
    notifyOn: 'none',
    cronExpression: null,
    cronTimezone: null,
    cronEnabled: null,
    cronMissedPolicy: null,
    cronOverlapPolicy: null,
    params: null,
    ref: null,
    cronSince: null,
    chatTeamId: null,
    chatChannelId: null,
    chatKeyword: null,
    chatAllowedUserIds: null,
    createdBy: userId,
    createdAt: at,
    updatedAt: at,
  });
  return id;
}

export type BenchGrant =
  | { type: 'agent'; agentIds: string[] }
  | { type: 'trigger'; triggerIds: string[] }
  | { type: 'storage'; bindingIds: string[] | null; permissions: ('read' | 'write' | 'delete')[] };

/**
 * Stores an API token and returns its plaintext. The stored hash is SHA-256 hex of the plaintext,
 * as the coordinator's `hashBearerSecret`; callers check a first request answers 200.
 */
export async function seedApiToken(
  coordinator: Coordinator,
  orgId: string,
  userId: string,
  scopes: BenchGrant[],
): Promise<string> {
  const plaintext = `drv_${randomBytes(32).toString('base64url')}`;
  await coordinator.ctx.repos.apiTokens.insert(
    {
      id: randomUUID(),
      orgId,
      userId,
      name: 'bench token',
      hint: `drv_…${plaintext.slice(-4)}`,
      scopes,
      rateLimit: { perMinute: null, perHour: null, perDay: null },
      expiresAt: null,
      revokedAt: null,
      createdAt: new Date().toISOString(),
    },
    createHash('sha256').update(plaintext, 'utf8').digest('hex'),
  );
  return plaintext;
}

/**
 * The trigger-run benchmarks' fixture: an agent reporting DEPLOY_WORKFLOW (enrolled, never
 * connected: every call's job stays pending), an async webhook trigger on it, and an API token
 * granted that trigger. Returns the three.
 */
export async function seedAsyncDeployTrigger(
  coordinator: Coordinator,
  orgId: string,
  userId: string,
): Promise<{ agentId: string; triggerId: string; token: string }> {
  const agentId = await seedAgent(coordinator, orgId, 0, [DEPLOY_WORKFLOW]);
  const triggerId = await seedTrigger(coordinator, orgId, userId, {
    agentId,
    workflowName: 'deploy',
    responseMode: 'async',
  });
  const token = await seedApiToken(coordinator, orgId, userId, [{ type: 'trigger', triggerIds: [triggerId] }]);
  return { agentId, triggerId, token };
}
