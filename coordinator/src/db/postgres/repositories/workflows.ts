import type { ParamDefinition, WorkflowStep } from '@drover/shared';
import type { Workflow, WorkflowRepository } from '../../../domain/model/workflows.js';
import { newId } from '../../../util/ids.js';
import type { PgPool, Queryable } from '../pool.js';
import { all, json, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

interface WorkflowRow {
  id: string;
  org_id: string;
  agent_id: string;
  name: string;
  description: string | null;
  version: string | null;
  params_schema: ParamDefinition[] | null;
  secrets_keys: string[] | null;
  timeout_ms: number | null;
  cancel_grace_ms: number | null;
  steps: WorkflowStep[] | null;
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
  paramsSchema: r.params_schema,
  secretsKeys: r.secrets_keys ?? [],
  steps: r.steps ?? [],
  timeoutMs: r.timeout_ms,
  cancelGraceMs: r.cancel_grace_ms,
  rateLimit: { perMinute: r.rate_limit_per_minute, perHour: r.rate_limit_per_hour, perDay: r.rate_limit_per_day },
  removedAt: r.removed_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const activeOfAgent = async (db: Queryable, agentId: string) =>
  (
    await all<WorkflowRow>(db, 'SELECT * FROM workflows WHERE agent_id = $1 AND removed_at IS NULL ORDER BY name', [
      agentId,
    ])
  ).map(toWorkflow);

export function createWorkflowRepository(pool: PgPool): WorkflowRepository {
  const inOrg = async (orgId: string, id: string) => {
    const row = await one<WorkflowRow>(pool, 'SELECT * FROM workflows WHERE org_id = $1 AND id = $2', [orgId, id]);
    return row ? toWorkflow(row) : null;
  };
  return {
    replaceForAgent(orgId, agentId, defs, at) {
      return inTransaction(pool, async (tx) => {
        for (const def of defs) {
          await run(
            tx,
            `INSERT INTO workflows (id, org_id, agent_id, name, description, version, params_schema, secrets_keys,
               timeout_ms, cancel_grace_ms, steps, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
             ON CONFLICT (agent_id, name) DO UPDATE SET
               description = excluded.description, version = excluded.version, params_schema = excluded.params_schema,
               secrets_keys = excluded.secrets_keys, timeout_ms = excluded.timeout_ms,
               cancel_grace_ms = excluded.cancel_grace_ms, steps = excluded.steps,
               removed_at = NULL, updated_at = excluded.updated_at`,
            [
              newId(),
              orgId,
              agentId,
              def.name,
              def.description ?? null,
              def.version ?? null,
              json(def.paramsSchema ?? null),
              JSON.stringify(def.secretsKeys ?? []),
              def.timeout ?? null,
              def.cancelGrace ?? null,
              JSON.stringify(def.steps),
              at,
            ],
          );
        }
        await run(
          tx,
          `UPDATE workflows SET removed_at = $1, updated_at = $1
           WHERE agent_id = $2 AND removed_at IS NULL AND name <> ALL($3::text[])`,
          [at, agentId, defs.map((d) => d.name)],
        );
        return activeOfAgent(tx, agentId);
      });
    },
    async listActiveByAgents(agentIds) {
      if (agentIds.length === 0) return [];
      const rows = await all<WorkflowRow>(
        pool,
        'SELECT * FROM workflows WHERE agent_id = ANY($1::text[]) AND removed_at IS NULL ORDER BY name, agent_id',
        [agentIds],
      );
      return rows.map(toWorkflow);
    },
    async findActiveByAgentAndName(agentId, name) {
      const row = await one<WorkflowRow>(
        pool,
        'SELECT * FROM workflows WHERE agent_id = $1 AND name = $2 AND removed_at IS NULL',
        [agentId, name],
      );
      return row ? toWorkflow(row) : null;
    },
    async listByOrg(orgId) {
      const rows = await all<WorkflowRow>(
        pool,
        'SELECT * FROM workflows WHERE org_id = $1 AND removed_at IS NULL ORDER BY name, agent_id',
        [orgId],
      );
      return rows.map(toWorkflow);
    },
    findInOrg: inOrg,
    async setRateLimits(orgId, id, limits, at) {
      const changed = await run(
        pool,
        `UPDATE workflows SET rate_limit_per_minute = $1, rate_limit_per_hour = $2, rate_limit_per_day = $3,
           updated_at = $4
         WHERE org_id = $5 AND id = $6 AND removed_at IS NULL`,
        [limits.perMinute, limits.perHour, limits.perDay, at, orgId, id],
      );
      return changed === 0 ? null : inOrg(orgId, id);
    },
  };
}
