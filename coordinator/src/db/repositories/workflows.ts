import type { ParamDefinition, WorkflowDefinition, WorkflowStep } from '@drover/shared';
import type { Workflow, WorkflowRepository } from '../../domain/model/workflows.js';
import { newId } from '../../util/ids.js';
import { parseJsonColumn } from '../../util/json.js';
import { all, command, json, query, run, type Database, type Named } from '../sql/index.js';

interface WorkflowRow {
  id: string;
  org_id: string;
  agent_id: string;
  name: string;
  description: string | null;
  version: string | null;
  params_schema: string | null;
  secrets_keys: string;
  timeout_ms: number | null;
  cancel_grace_ms: number | null;
  steps: string;
  rate_limit_per_minute: number | null;
  rate_limit_per_hour: number | null;
  rate_limit_per_day: number | null;
  removed_at: string | null;
  created_at: string;
  updated_at: string;
}

const toWorkflow = (r: WorkflowRow): Workflow => ({
  id: r.id,
  orgId: r.org_id,
  agentId: r.agent_id,
  name: r.name,
  description: r.description,
  version: r.version,
  paramsSchema: parseJsonColumn<ParamDefinition[]>(r.params_schema, 'workflows.params_schema'),
  secretsKeys: parseJsonColumn<string[]>(r.secrets_keys, 'workflows.secrets_keys') ?? [],
  steps: parseJsonColumn<WorkflowStep[]>(r.steps, 'workflows.steps') ?? [],
  timeoutMs: r.timeout_ms,
  cancelGraceMs: r.cancel_grace_ms,
  rateLimit: { perMinute: r.rate_limit_per_minute, perHour: r.rate_limit_per_hour, perDay: r.rate_limit_per_day },
  removedAt: r.removed_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const UPSERT = command<Named>(
  `INSERT INTO workflows (id, org_id, agent_id, name, description, version, params_schema, secrets_keys,
     timeout_ms, cancel_grace_ms, steps, created_at, updated_at)
   VALUES (@id, @orgId, @agentId, @name, @description, @version, @paramsSchema, @secretsKeys,
     @timeoutMs, @cancelGraceMs, @steps, @at, @at)
   ON CONFLICT (agent_id, name) DO UPDATE SET
     description = excluded.description, version = excluded.version, params_schema = excluded.params_schema,
     secrets_keys = excluded.secrets_keys, timeout_ms = excluded.timeout_ms,
     cancel_grace_ms = excluded.cancel_grace_ms, steps = excluded.steps,
     removed_at = NULL, updated_at = excluded.updated_at`,
);
const REMOVE_MISSING = command<[string, string, string, string]>(
  (d) => `UPDATE workflows SET removed_at = ?, updated_at = ?
    WHERE agent_id = ? AND removed_at IS NULL AND name NOT IN (SELECT value FROM ${d.jsonArrayElements}(?))`,
);
const ACTIVE_BY_AGENT = query<WorkflowRow, [string]>(
  (d) => `SELECT * FROM workflows WHERE agent_id = ? AND removed_at IS NULL ORDER BY name${d.byteOrder}`,
);
const ACTIVE_BY_AGENTS = query<WorkflowRow, [string]>(
  (d) => `SELECT * FROM workflows WHERE agent_id ${d.inJsonArray('?')}
    AND removed_at IS NULL ORDER BY name${d.byteOrder}, agent_id`,
);
/** One workflow name on many agents (a selector trigger's): the (agent_id, name) key, agent by agent. */
const ACTIVE_NAMED_BY_AGENTS = query<WorkflowRow, [string, string]>(
  (d) => `SELECT * FROM workflows WHERE name = ? AND agent_id ${d.inJsonArray('?')} AND removed_at IS NULL`,
);
const BY_AGENT_AND_NAME = query<WorkflowRow, [string, string]>(
  'SELECT * FROM workflows WHERE agent_id = ? AND name = ? AND removed_at IS NULL',
);
const BY_ORG = query<WorkflowRow, [string]>(
  (d) => `SELECT * FROM workflows WHERE org_id = ? AND removed_at IS NULL ORDER BY name${d.byteOrder}, agent_id`,
);
const IN_ORG = query<WorkflowRow, [string, string]>('SELECT * FROM workflows WHERE org_id = ? AND id = ?');
const SET_LIMITS = command<[number | null, number | null, number | null, string, string, string]>(
  `UPDATE workflows SET rate_limit_per_minute = ?, rate_limit_per_hour = ?, rate_limit_per_day = ?, updated_at = ?
   WHERE org_id = ? AND id = ? AND removed_at IS NULL`,
);

/** A definition's columns as the UPSERT writes them: what a stored row is compared with. */
function storedFields(def: WorkflowDefinition) {
  return {
    name: def.name,
    description: def.description ?? null,
    version: def.version ?? null,
    paramsSchema: json(def.paramsSchema),
    secretsKeys: JSON.stringify(def.secretsKeys ?? []),
    timeoutMs: def.timeout ?? null,
    cancelGraceMs: def.cancelGrace ?? null,
    steps: JSON.stringify(def.steps),
  };
}

/** Whether the active rows (by name) are exactly the definitions, as they would be written. */
function unchanged(active: readonly WorkflowRow[], defs: readonly WorkflowDefinition[]): boolean {
  if (active.length !== defs.length) return false;
  const byName = new Map(active.map((r) => [r.name, r]));
  return defs.every((def) => {
    const row = byName.get(def.name);
    const f = storedFields(def);
    return (
      row !== undefined &&
      row.description === f.description &&
      row.version === f.version &&
      row.params_schema === f.paramsSchema &&
      row.secrets_keys === f.secretsKeys &&
      row.timeout_ms === f.timeoutMs &&
      row.cancel_grace_ms === f.cancelGraceMs &&
      row.steps === f.steps
    );
  });
}

export function createWorkflowRepository(db: Database): WorkflowRepository {
  const inOrg = async (orgId: string, id: string) => {
    const row = await db.one(IN_ORG, [orgId, id]);
    return row ? toWorkflow(row) : null;
  };
  return {
    async replaceForAgent(orgId, agentId, defs, at) {
      // The same set again (every agent reports at every connect): nothing written, so a fleet
      // reconnecting moves neither the rows' updated_at nor the change counter the caches follow.
      const active = await db.all(ACTIVE_BY_AGENT, [agentId]);
      if (unchanged(active, defs)) return active.map(toWorkflow);
      return db.transaction(function* () {
        for (const def of defs) yield* run(UPSERT, { id: newId(), orgId, agentId, ...storedFields(def), at });
        yield* run(REMOVE_MISSING, [at, at, agentId, JSON.stringify(defs.map((d) => d.name))]);
        return (yield* all(ACTIVE_BY_AGENT, [agentId])).map(toWorkflow);
      });
    },
    async listActiveByAgents(agentIds) {
      if (agentIds.length === 0) return [];
      return (await db.all(ACTIVE_BY_AGENTS, [JSON.stringify(agentIds)])).map(toWorkflow);
    },
    async listActiveNamedByAgents(name, agentIds) {
      if (agentIds.length === 0) return [];
      return (await db.all(ACTIVE_NAMED_BY_AGENTS, [name, JSON.stringify(agentIds)])).map(toWorkflow);
    },
    async findActiveByAgentAndName(agentId, name) {
      const row = await db.one(BY_AGENT_AND_NAME, [agentId, name]);
      return row ? toWorkflow(row) : null;
    },
    async listByOrg(orgId) {
      return (await db.all(BY_ORG, [orgId])).map(toWorkflow);
    },
    findInOrg: inOrg,
    async setRateLimits(orgId, id, limits, at) {
      if ((await db.run(SET_LIMITS, [limits.perMinute, limits.perHour, limits.perDay, at, orgId, id])) === 0)
        return null;
      return inOrg(orgId, id);
    },
  };
}
