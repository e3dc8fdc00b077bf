import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Coordinator } from '@drover/coordinator';

/**
 * Fixtures written straight through the coordinator's repositories: fast, and independent of
 * the management routes, so a benchmark measures only the route under test.
 */

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
  const { repos } = coordinator.ctx;
  const at = new Date().toISOString();
  const agents: SeededAgent[] = [];
  for (let i = 0; i < count; i++) {
    const tokenHash = randomBytes(32).toString('hex');
    await repos.enrollmentTokens.insert(
      {
        id: randomUUID(),
        orgId,
        name: null,
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        usedAt: null,
        usedByAgentId: null,
        createdBy: null,
        createdAt: at,
      },
      tokenHash,
    );
    const id = randomUUID();
    const outcome = await repos.agents.enroll(
      tokenHash,
      {
        id,
        name: `edge-${String(i).padStart(2, '0')}`,
        hostname: `edge-${i}.bench.local`,
        os: 'linux 6.8.0',
        agentVersion: '0.1.0',
        publicKey: randomBytes(32).toString('base64'),
      },
      at,
    );
    if (!outcome.ok) throw new Error(`seed agent: ${outcome.reason}`);
    const workflowNames = Array.from({ length: workflowsPerAgent }, (_, w) => `workflow-${w}`);
    await repos.workflows.replaceForAgent(
      orgId,
      id,
      workflowNames.map((name) => ({
        name,
        description: `${name} on edge-${i}`,
        version: '1.0.0',
        paramsSchema: [{ name: 'ref', type: 'string' as const, required: true }],
        secretsKeys: ['DEPLOY_KEY'],
        steps: [{ run: 'echo', args: ['hello'] }],
      })),
      at,
    );
    agents.push({ id, workflowNames });
  }
  return agents;
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
