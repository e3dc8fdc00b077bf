import type { ParamDefinition, WorkflowDefinition, WorkflowStep } from '@drover/shared';
import type { RateLimits } from './rate-limits.js';

export interface Workflow {
  id: string;
  orgId: string;
  agentId: string;
  name: string;
  description: string | null;
  version: string | null;
  paramsSchema: ParamDefinition[] | null;
  /** Internal: never returned by the public API. */
  secretsKeys: string[];
  /** Internal: never returned by the public API. */
  steps: WorkflowStep[];
  timeoutMs: number | null;
  /** The workflow's `cancelGrace` in ms (null: the default, DEFAULT_CANCEL_GRACE_MS). */
  cancelGraceMs: number | null;
  rateLimit: RateLimits;
  removedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface WorkflowRepository {
  /**
   * Replaces the agent's set of workflows in one transaction: new names are added, known names
   * updated (keeping their id and limits; a removed one comes back), names missing from the set
   * are marked removed. Returns the active set, ascending by name.
   */
  replaceForAgent(orgId: string, agentId: string, defs: readonly WorkflowDefinition[], at: string): Promise<Workflow[]>;
  /** Active workflows of these agents, ascending by name (then agent id). */
  listActiveByAgents(agentIds: readonly string[]): Promise<Workflow[]>;
  /** The active workflow of this name on each of these agents that has one, in no particular order. */
  listActiveNamedByAgents(name: string, agentIds: readonly string[]): Promise<Workflow[]>;
  findActiveByAgentAndName(agentId: string, name: string): Promise<Workflow | null>;
  /** Active workflows of the organization, ascending by name. */
  listByOrg(orgId: string): Promise<Workflow[]>;
  findInOrg(orgId: string, id: string): Promise<Workflow | null>;
  setRateLimits(orgId: string, id: string, limits: RateLimits, at: string): Promise<Workflow | null>;
}
