import type {
  Agent,
  AgentRepository,
  AgentStatus,
  EnrollmentTokenRefusal,
  EnrollOutcome,
  NewAgent,
} from '../../domain/model/agents.js';
import type { Db } from '../database.js';
import type { WriteExecutor } from '../writer/executor.js';

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

/** Purge expired nonces at most this often. */
const NONCE_PURGE_INTERVAL_MS = 60_000;

/**
 * Request nonces as a write operation of the group commit (db/writer/executor.ts): every signed
 * agent request records one, so it goes through the group commit with the other hot writes
 * instead of taking the database's write lock on the request's own connection.
 */
function createNonceWrites(db: Db) {
  const addNonce = db.prepare('INSERT OR IGNORE INTO agent_nonces (agent_id, nonce, expires_at) VALUES (?, ?, ?)');
  const purgeNonces = db.prepare('DELETE FROM agent_nonces WHERE expires_at < ?');
  let lastPurge = 0;
  return {
    remember({ agentId, nonce, expiresAtMs, nowMs }: NonceUse): boolean {
      if (nowMs - lastPurge > NONCE_PURGE_INTERVAL_MS) {
        lastPurge = nowMs;
        purgeNonces.run(nowMs);
      }
      return addNonce.run(agentId, nonce, expiresAtMs).changes === 1;
    },
  };
}

interface NonceUse {
  agentId: string;
  nonce: string;
  expiresAtMs: number;
  nowMs: number;
}

/** `tokenRefusal` decides whether an enrollment token can be spent (the domain's). */
export function createAgentRepository(
  db: Db,
  writes: WriteExecutor,
  tokenRefusal: EnrollmentTokenRefusal,
): AgentRepository {
  const nonces = createNonceWrites(db);
  const tokenByHash = db.prepare<[string], { id: string; org_id: string; expires_at: string; used_at: string | null }>(
    'SELECT id, org_id, expires_at, used_at FROM enrollment_tokens WHERE token_hash = ?',
  );
  const spendToken = db.prepare(
    'UPDATE enrollment_tokens SET used_at = ?, used_by_agent_id = ? WHERE id = ? AND used_at IS NULL',
  );
  const insert = db.prepare(
    `INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at, seq)
     VALUES (@id, @orgId, @name, @hostname, @os, @agentVersion, @publicKey, 'pending', @at,
             (SELECT COALESCE(MAX(seq), 0) + 1 FROM agents))`,
  );
  const byId = db.prepare<[string], AgentRow>('SELECT * FROM agents WHERE id = ?');
  const inOrg = db.prepare<[string, string], AgentRow>('SELECT * FROM agents WHERE org_id = ? AND id = ?');
  const byOrg = db.prepare<[string], AgentRow>('SELECT * FROM agents WHERE org_id = ? ORDER BY seq DESC');
  const byIds = db.prepare<[string, string], AgentRow>(
    'SELECT * FROM agents WHERE org_id = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY seq DESC',
  );
  const rename = db.prepare('UPDATE agents SET name = ? WHERE org_id = ? AND id = ?');
  const revoke = db.prepare(
    "UPDATE agents SET status = 'revoked', revoked_at = COALESCE(revoked_at, ?) WHERE org_id = ? AND id = ?",
  );
  const connected = db.prepare(
    "UPDATE agents SET status = 'connected', last_seen_at = ? WHERE id = ? AND status IN ('pending', 'connected', 'disconnected')",
  );
  const touch = db.prepare(
    `UPDATE agents SET last_seen_at = ?, status = 'connected'
     WHERE id IN (SELECT value FROM json_each(?)) AND status IN ('connected', 'disconnected')`,
  );
  const disconnected = db.prepare(
    `UPDATE agents SET status = 'disconnected', last_seen_at = COALESCE(?, last_seen_at)
     WHERE id = ? AND status = 'connected' AND (last_seen_at IS NULL OR last_seen_at <= ?)`,
  );
  const connectedIds = db.prepare<[], { id: string }>("SELECT id FROM agents WHERE status = 'connected'");
  const lastSeen = db.prepare<[], { id: string; name: string; lastSeenAt: string }>(
    "SELECT id, name, last_seen_at AS lastSeenAt FROM agents WHERE status <> 'revoked' AND last_seen_at IS NOT NULL",
  );

  const enroll = db.transaction((tokenHash: string, agent: NewAgent, at: string): EnrollOutcome => {
    const token = tokenByHash.get(tokenHash);
    const refusal = tokenRefusal(token ? { usedAt: token.used_at, expiresAt: token.expires_at } : null, at);
    if (refusal || !token) return { ok: false, reason: refusal ?? 'unknown' };
    if (spendToken.run(at, agent.id, token.id).changes !== 1) return { ok: false, reason: 'used' };
    insert.run({ ...agent, orgId: token.org_id, at });
    return { ok: true, agent: toAgent(byId.get(agent.id) as AgentRow) };
  });

  return {
    async enroll(tokenHash, agent, at) {
      return enroll(tokenHash, agent, at);
    },
    async findById(id) {
      const row = byId.get(id);
      return row ? toAgent(row) : null;
    },
    async findInOrg(orgId, id) {
      const row = inOrg.get(orgId, id);
      return row ? toAgent(row) : null;
    },
    async listByOrg(orgId) {
      return byOrg.all(orgId).map(toAgent);
    },
    async listByIds(orgId, ids) {
      if (ids.length === 0) return [];
      return byIds.all(orgId, JSON.stringify(ids)).map(toAgent);
    },
    async rename(orgId, id, name) {
      if (rename.run(name, orgId, id).changes === 0) return null;
      return toAgent(inOrg.get(orgId, id) as AgentRow);
    },
    async revoke(orgId, id, at) {
      if (revoke.run(at, orgId, id).changes === 0) return null;
      return toAgent(inOrg.get(orgId, id) as AgentRow);
    },
    rememberNonce(agentId, nonce, expiresAtMs, nowMs) {
      return writes.run(() => nonces.remember({ agentId, nonce, expiresAtMs, nowMs }));
    },
    async markConnected(id, at) {
      return connected.run(at, id).changes === 1;
    },
    async touch(ids, at) {
      if (ids.length > 0) touch.run(at, JSON.stringify(ids));
    },
    async markDisconnected(id, lastSeenAt, unlessSeenAfter) {
      return disconnected.run(lastSeenAt, id, unlessSeenAfter).changes === 1;
    },
    async listConnectedIds() {
      return connectedIds.all().map((r) => r.id);
    },
    async listLastSeen() {
      return lastSeen.all();
    },
  };
}
