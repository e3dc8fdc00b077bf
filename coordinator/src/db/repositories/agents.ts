import type {
  Agent,
  AgentLastSeen,
  AgentRepository,
  AgentStatus,
  EnrollmentTokenRefusal,
  EnrollOutcome,
} from '../../domain/model/agents.js';
import { mergeLabels, type Role } from '@drover/shared';
import { command, lock, one, query, run, type Database, type Flow } from '../sql/index.js';

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
  reported_labels: string;
  operator_labels: string;
  queue_capacity: number | null;
  workflows_digest: string | null;
  labels_digest: string | null;
  seq: number;
  revision: number;
}

const toAgent = (r: AgentRow): Agent => {
  const reportedLabels = JSON.parse(r.reported_labels) as Record<string, string>;
  const operatorLabels = JSON.parse(r.operator_labels) as Record<string, string>;
  return {
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
    queueCapacity: r.queue_capacity,
    labels: mergeLabels(reportedLabels, operatorLabels),
    reportedLabels,
    operatorLabels,
    revision: Number(r.revision),
    publicKey: r.public_key,
    seq: Number(r.seq),
    reportDigests: { workflows: r.workflows_digest, labels: r.labels_digest },
  };
};

/**
 * An enrollment token, its row locked on PostgreSQL: two agents racing with it on two coordinators
 * take turns. `issuer_left`: the member who made it is no longer a member of its organization;
 * `issuer_role`: their role there now (null when they are not a member).
 */
const TOKEN = query<
  {
    id: string;
    org_id: string;
    expires_at: string;
    used_at: string | null;
    revoked_at: string | null;
    issuer_left: number | boolean;
    issuer_role: Role | null;
  },
  [string]
>(
  (d) => `SELECT t.id, t.org_id, t.expires_at, t.used_at, t.revoked_at,
     (t.created_by IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM memberships m WHERE m.org_id = t.org_id AND m.user_id = t.created_by)) AS issuer_left,
     (SELECT m.role FROM memberships m WHERE m.org_id = t.org_id AND m.user_id = t.created_by) AS issuer_role
   FROM enrollment_tokens t WHERE t.token_hash = ? ${d.forUpdate}`,
);
const SPEND_TOKEN = command<[string, string, string]>(
  'UPDATE enrollment_tokens SET used_at = ?, used_by_agent_id = ? WHERE id = ? AND used_at IS NULL AND revoked_at IS NULL',
);
/**
 * `seq`, the registration order: PostgreSQL's identity gives it; SQLite's column has no default,
 * so the statement takes the next after the highest (its single writer makes that unique).
 */
const INSERT = query<AgentRow, [string, string, string, string, string, string, string, string]>(
  (d) => `INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at, seq)
   VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?,
     ${d.name === 'sqlite' ? '(SELECT COALESCE(MAX(seq), 0) + 1 FROM agents)' : 'DEFAULT'})
   RETURNING *`,
);
const BY_ID = query<AgentRow, [string]>('SELECT * FROM agents WHERE id = ?');
/** Through its index (migration 0048; PostgreSQL 0031). */
const KEY_IN_USE = query<{ id: string }, [string]>('SELECT id FROM agents WHERE public_key = ? LIMIT 1');
const IN_ORG = query<AgentRow, [string, string]>('SELECT * FROM agents WHERE org_id = ? AND id = ?');
const BY_ORG = query<AgentRow, [string]>('SELECT * FROM agents WHERE org_id = ? ORDER BY seq DESC');
const COUNT_BY_STATUS = query<{ status: AgentStatus; n: number }, [string]>(
  'SELECT status, count(*) AS n FROM agents WHERE org_id = ? GROUP BY status',
);
const BY_IDS = query<AgentRow, [string, string]>(
  (d) => `SELECT * FROM agents WHERE org_id = ? AND id ${d.inJsonArray('?')}
   ORDER BY seq DESC`,
);
/** Each of name and labels kept when NULL; only from the revision the change was made from. */
const EDIT = query<AgentRow, [string | null, string | null, string, string, number]>(
  `UPDATE agents SET name = COALESCE(?, name), operator_labels = COALESCE(?, operator_labels), revision = revision + 1
   WHERE org_id = ? AND id = ? AND revision = ?
   RETURNING *`,
);
const REPORTED_LABELS = query<AgentRow, [string, string]>(
  'UPDATE agents SET reported_labels = ? WHERE id = ? RETURNING *',
);
/** The digest's column is chosen from this fixed map, never from input. */
const REPORT_DIGEST = {
  workflows: command<[string, string]>('UPDATE agents SET workflows_digest = ? WHERE id = ?'),
  labels: command<[string, string]>('UPDATE agents SET labels_digest = ? WHERE id = ?'),
} as const;
/** Only an agent not revoked yet: of two revocations at once, one changes the row (the other waits, then finds it revoked). */
const REVOKE = query<AgentRow, [string, string, string]>(
  `UPDATE agents SET status = 'revoked', revoked_at = COALESCE(revoked_at, ?)
   WHERE org_id = ? AND id = ? AND status <> 'revoked'
   RETURNING *`,
);
const ADD_NONCE = command<[string, string, number]>(
  'INSERT INTO agent_nonces (agent_id, nonce, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
);
const PURGE_NONCES = command<[number]>('DELETE FROM agent_nonces WHERE expires_at < ?');
const CONNECTED = command<[string, number | null, string | null, string]>(
  `UPDATE agents SET status = 'connected', last_seen_at = ?, queue_capacity = COALESCE(?, queue_capacity),
     agent_version = COALESCE(?, agent_version)
   WHERE id = ? AND status IN ('pending', 'connected', 'disconnected')`,
);
const TOUCH = command<[string, string]>(
  (d) => `UPDATE agents SET last_seen_at = ?, status = 'connected'
   WHERE id ${d.inJsonArray('?')} AND status IN ('connected', 'disconnected')`,
);
const DISCONNECTED = command<[string | null, string, string]>(
  `UPDATE agents SET status = 'disconnected', last_seen_at = COALESCE(?, last_seen_at)
   WHERE id = ? AND status = 'connected' AND (last_seen_at IS NULL OR last_seen_at <= ?)`,
);
const CONNECTED_IDS = query<{ id: string }, []>("SELECT id FROM agents WHERE status = 'connected'");
const CONNECTED_UNSEEN_IDS = query<{ id: string }, [string]>(
  "SELECT id FROM agents WHERE status = 'connected' AND (last_seen_at IS NULL OR last_seen_at < ?)",
);
const LAST_SEEN = query<AgentLastSeen, []>(
  `SELECT id, name, last_seen_at AS "lastSeenAt" FROM agents WHERE status <> 'revoked' AND last_seen_at IS NOT NULL`,
);

/** Purge expired nonces at most this often (per coordinator). */
const NONCE_PURGE_INTERVAL_MS = 60_000;

/**
 * `tokenRefusal` decides whether an enrollment token can be spent (the domain's). Request nonces
 * are a hot write (every signed agent request records one): on SQLite an operation of the group
 * commit. A nonce is a row whose primary key refuses its second use, on whichever coordinator it comes.
 */
export function createAgentRepository(db: Database, tokenRefusal: EnrollmentTokenRefusal): AgentRepository {
  let lastPurge = 0;
  const agentOrNull = (row: AgentRow | null) => (row ? toAgent(row) : null);
  return {
    enroll(tokenHash, agent, at) {
      return db.transaction(function* (): Flow<EnrollOutcome> {
        const token = yield* one(TOKEN, [tokenHash]);
        const refusal = tokenRefusal(
          token
            ? {
                usedAt: token.used_at,
                expiresAt: token.expires_at,
                revokedAt: token.revoked_at,
                issuerLeft: Boolean(token.issuer_left),
                issuerRole: token.issuer_role,
              }
            : null,
          at,
        );
        if (refusal || !token) return { ok: false, reason: refusal ?? 'unknown' };
        const { id, name, hostname, os, agentVersion, publicKey } = agent;
        // After the token, so that only the holder of a valid one learns whether a key is enrolled;
        // the lock makes two enrollments of one key on two coordinators take turns.
        yield* lock('agent-public-key', publicKey);
        if (yield* one(KEY_IN_USE, [publicKey])) return { ok: false, reason: 'key_in_use' };
        if ((yield* run(SPEND_TOKEN, [at, agent.id, token.id])) !== 1) return { ok: false, reason: 'used' };
        const row = yield* one(INSERT, [id, token.org_id, name, hostname, os, agentVersion, publicKey, at]);
        return { ok: true, agent: toAgent(row!) };
      });
    },
    async findById(id) {
      return agentOrNull(await db.one(BY_ID, [id]));
    },
    async findInOrg(orgId, id) {
      return agentOrNull(await db.one(IN_ORG, [orgId, id]));
    },
    async countByStatus(orgId) {
      const counts: Record<AgentStatus, number> = { connected: 0, disconnected: 0, pending: 0, revoked: 0 };
      for (const { status, n } of await db.all(COUNT_BY_STATUS, [orgId])) counts[status] = n;
      return counts;
    },
    async listByOrg(orgId) {
      return (await db.all(BY_ORG, [orgId])).map(toAgent);
    },
    async listByIds(orgId, ids) {
      if (ids.length === 0) return [];
      return (await db.all(BY_IDS, [orgId, JSON.stringify(ids)])).map(toAgent);
    },
    async edit(orgId, id, revision, { name, operatorLabels }) {
      const labels = operatorLabels === undefined ? null : JSON.stringify(operatorLabels);
      const edited = await db.one(EDIT, [name ?? null, labels, orgId, id, revision]);
      if (edited) return toAgent(edited);
      return (await db.one(IN_ORG, [orgId, id])) ? 'changed' : null;
    },
    async setReportedLabels(id, labels) {
      return agentOrNull(await db.one(REPORTED_LABELS, [JSON.stringify(labels), id]));
    },
    async recordReportDigest(id, kind, digest) {
      await db.run(REPORT_DIGEST[kind], [digest, id]);
    },
    async revoke(orgId, id, at) {
      const revoked = agentOrNull(await db.one(REVOKE, [at, orgId, id]));
      if (revoked) return { agent: revoked, first: true };
      const agent = agentOrNull(await db.one(IN_ORG, [orgId, id]));
      return agent ? { agent, first: false } : null;
    },
    rememberNonce(agentId, nonce, expiresAtMs, nowMs) {
      const purge = nowMs - lastPurge > NONCE_PURGE_INTERVAL_MS;
      if (purge) lastPurge = nowMs;
      return db.write(
        function* () {
          if (purge) yield* run(PURGE_NONCES, [nowMs]);
          return (yield* run(ADD_NONCE, [agentId, nonce, expiresAtMs])) === 1;
        },
        { atomic: false },
      );
    },
    async markConnected(id, at, queueCapacity, agentVersion) {
      return (await db.run(CONNECTED, [at, queueCapacity ?? null, agentVersion ?? null, id])) === 1;
    },
    async touch(ids, at) {
      if (ids.length > 0) await db.run(TOUCH, [at, JSON.stringify(ids)]);
    },
    async markDisconnected(id, lastSeenAt, unlessSeenAfter) {
      return (await db.run(DISCONNECTED, [lastSeenAt, id, unlessSeenAfter])) === 1;
    },
    async listConnectedIds(notSeenSince) {
      const rows =
        notSeenSince === undefined
          ? await db.all(CONNECTED_IDS, [])
          : await db.all(CONNECTED_UNSEEN_IDS, [notSeenSince]);
      return rows.map((r) => r.id);
    },
    async listLastSeen() {
      return db.all(LAST_SEEN, []);
    },
  };
}
