import type {
  Agent,
  AgentRepository,
  AgentStatus,
  EnrollmentTokenRefusal,
  EnrollOutcome,
} from '../../../domain/model/agents.js';
import type { PgPool } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

interface AgentRow {
  id: string;
  org_id: string;
  name: string;
  hostname: string;
  os: string;
  agent_version: string;
  public_key: string;
  status: AgentStatus;
  last_seen_at: string | null;
  enrolled_at: string;
  revoked_at: string | null;
}

const toAgent = (r: AgentRow): Agent => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  hostname: r.hostname,
  os: r.os,
  agentVersion: r.agent_version,
  status: r.status,
  lastSeenAt: r.last_seen_at,
  enrolledAt: r.enrolled_at,
  revokedAt: r.revoked_at,
  publicKey: r.public_key,
});

/** Purge expired nonces at most this often (per coordinator). */
const NONCE_PURGE_INTERVAL_MS = 60_000;

/**
 * `tokenRefusal` decides whether an enrollment token can be spent (the domain's). The enrollment
 * locks the token's row, so two agents racing with one token on two coordinators make one agent.
 * A nonce is a row whose primary key refuses its second use, on whichever coordinator it comes.
 */
export function createAgentRepository(pool: PgPool, tokenRefusal: EnrollmentTokenRefusal): AgentRepository {
  let lastPurge = 0;
  const reread = async (orgId: string, id: string) =>
    toAgent((await one<AgentRow>(pool, 'SELECT * FROM agents WHERE org_id = $1 AND id = $2', [orgId, id]))!);
  return {
    enroll(tokenHash, agent, at) {
      return inTransaction(pool, async (tx): Promise<EnrollOutcome> => {
        const token = await one<{ id: string; org_id: string; expires_at: string; used_at: string | null }>(
          tx,
          'SELECT id, org_id, expires_at, used_at FROM enrollment_tokens WHERE token_hash = $1 FOR UPDATE',
          [tokenHash],
        );
        const refusal = tokenRefusal(token ? { usedAt: token.used_at, expiresAt: token.expires_at } : null, at);
        if (refusal || !token) return { ok: false, reason: refusal ?? 'unknown' };
        await run(tx, 'UPDATE enrollment_tokens SET used_at = $1, used_by_agent_id = $2 WHERE id = $3', [
          at,
          agent.id,
          token.id,
        ]);
        const row = await one<AgentRow>(
          tx,
          `INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8) RETURNING *`,
          [agent.id, token.org_id, agent.name, agent.hostname, agent.os, agent.agentVersion, agent.publicKey, at],
        );
        return { ok: true, agent: toAgent(row!) };
      });
    },
    async findById(id) {
      const row = await one<AgentRow>(pool, 'SELECT * FROM agents WHERE id = $1', [id]);
      return row ? toAgent(row) : null;
    },
    async findInOrg(orgId, id) {
      const row = await one<AgentRow>(pool, 'SELECT * FROM agents WHERE org_id = $1 AND id = $2', [orgId, id]);
      return row ? toAgent(row) : null;
    },
    async listByOrg(orgId) {
      return (await all<AgentRow>(pool, 'SELECT * FROM agents WHERE org_id = $1 ORDER BY seq DESC', [orgId])).map(
        toAgent,
      );
    },
    async listByIds(orgId, ids) {
      if (ids.length === 0) return [];
      const rows = await all<AgentRow>(
        pool,
        'SELECT * FROM agents WHERE org_id = $1 AND id = ANY($2::text[]) ORDER BY seq DESC',
        [orgId, ids],
      );
      return rows.map(toAgent);
    },
    async rename(orgId, id, name) {
      if ((await run(pool, 'UPDATE agents SET name = $1 WHERE org_id = $2 AND id = $3', [name, orgId, id])) === 0) {
        return null;
      }
      return reread(orgId, id);
    },
    async revoke(orgId, id, at) {
      const changed = await run(
        pool,
        "UPDATE agents SET status = 'revoked', revoked_at = COALESCE(revoked_at, $1) WHERE org_id = $2 AND id = $3",
        [at, orgId, id],
      );
      return changed === 0 ? null : reread(orgId, id);
    },
    async rememberNonce(agentId, nonce, expiresAtMs, nowMs) {
      if (nowMs - lastPurge > NONCE_PURGE_INTERVAL_MS) {
        lastPurge = nowMs;
        await run(pool, 'DELETE FROM agent_nonces WHERE expires_at < $1', [nowMs]);
      }
      const added = await run(
        pool,
        'INSERT INTO agent_nonces (agent_id, nonce, expires_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
        [agentId, nonce, expiresAtMs],
      );
      return added === 1;
    },
    async markConnected(id, at) {
      const changed = await run(
        pool,
        `UPDATE agents SET status = 'connected', last_seen_at = $1
         WHERE id = $2 AND status IN ('pending', 'connected', 'disconnected')`,
        [at, id],
      );
      return changed === 1;
    },
    async touch(ids, at) {
      if (ids.length === 0) return;
      await run(
        pool,
        `UPDATE agents SET last_seen_at = $1, status = 'connected'
         WHERE id = ANY($2::text[]) AND status IN ('connected', 'disconnected')`,
        [at, ids],
      );
    },
    async markDisconnected(id, lastSeenAt, unlessSeenAfter) {
      const changed = await run(
        pool,
        `UPDATE agents SET status = 'disconnected', last_seen_at = COALESCE($1, last_seen_at)
         WHERE id = $2 AND status = 'connected' AND (last_seen_at IS NULL OR last_seen_at <= $3)`,
        [lastSeenAt, id, unlessSeenAfter],
      );
      return changed === 1;
    },
    async listConnectedIds() {
      return (await all<{ id: string }>(pool, "SELECT id FROM agents WHERE status = 'connected'")).map((r) => r.id);
    },
    async listLastSeen() {
      return all<{ id: string; name: string; lastSeenAt: string }>(
        pool,
        `SELECT id, name, last_seen_at AS "lastSeenAt" FROM agents
         WHERE status <> 'revoked' AND last_seen_at IS NOT NULL`,
      );
    },
  };
}
