import type { Role } from '@drover/shared';

export const AGENT_STATUSES = ['connected', 'disconnected', 'pending', 'revoked'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

export interface Agent {
  id: string;
  orgId: string;
  name: string;
  hostname: string;
  os: string;
  agentVersion: string;
  status: AgentStatus;
  lastSeenAt: string | null;
  enrolledAt: string;
  revokedAt: string | null;
  /** The queue capacity its stream announced when it last connected; null: the default. */
  queueCapacity: number | null;
  /** The labels it carries: `reportedLabels` with `operatorLabels` on top (docs/fleets.md). */
  labels: Record<string, string>;
  /** The labels the agent reports of itself when it connects (`os` and `arch` among them). */
  reportedLabels: Record<string, string>;
  /** The labels operators set; an operator's label wins over the agent's of the same key. */
  operatorLabels: Record<string, string>;
  /** How many changes operators made to it (its name, its operators' labels): a change's `If-Match`. */
  revision: number;
  /** Internal: never returned by any route. */
  publicKey: string;
  /** Internal: its registration number, increasing (the agents list's order and its pages' cursor). */
  seq: number;
  /**
   * Internal: the SHA-256 (hex) of the body of the agent's last accepted workflows and labels
   * reports, which a reconnecting agent may claim instead of reporting again (docs/agent-protocol.md §6.1).
   */
  reportDigests: ReportDigests;
}

/** What operators change of an agent: its name, its operators' labels (each when given). */
export interface AgentEdit {
  name?: string;
  operatorLabels?: Readonly<Record<string, string>>;
}

/** What kind of report of the agent a digest is of. */
export type ReportKind = 'workflows' | 'labels';
export type ReportDigests = Record<ReportKind, string | null>;

export interface NewAgent {
  id: string;
  name: string;
  hostname: string;
  os: string;
  agentVersion: string;
  publicKey: string;
}

/**
 * Why an enrollment token was refused: none has this hash, it was spent, an operator revoked it,
 * it expired, or (`issuer_left`) the member who made it has left its organization (or was removed),
 * or (`issuer_role`) their role there may no longer enroll agents (a viewer now).
 */
export type EnrollRefusal = 'unknown' | 'used' | 'revoked' | 'expired' | 'issuer_left' | 'issuer_role';

/**
 * `key_in_use`: the public key is already that of an agent (of any organization, revoked ones
 * included). The signature does not cover X-Agent-Id, so two agents with one key could each
 * be sent the other's signed requests.
 */
export type EnrollOutcome = { ok: true; agent: Agent } | { ok: false; reason: EnrollRefusal | 'key_in_use' };

/** An enrollment token as stored (null: none has the hash). */
export type StoredEnrollmentToken = {
  usedAt: string | null;
  expiresAt: string;
  revokedAt: string | null;
  issuerLeft: boolean;
  /** The maker's role in the organization now (null: not a member, or their account is gone). */
  issuerRole: Role | null;
} | null;

/** Why a token cannot be spent at `at`, or null (domain/agents/agent-enrollment.ts); run inside the enrollment. */
export type EnrollmentTokenRefusal = (token: StoredEnrollmentToken, at: string) => EnrollRefusal | null;

export interface AgentRepository {
  /**
   * Spends a single-use enrollment token and creates the agent, atomically: two agents racing
   * with one token make exactly one agent. A public key some agent already has is refused
   * (`key_in_use`) without spending the token.
   */
  enroll(tokenHash: string, agent: NewAgent, at: string): Promise<EnrollOutcome>;
  findById(id: string): Promise<Agent | null>;
  findInOrg(orgId: string, id: string): Promise<Agent | null>;
  /** Most recently registered first. */
  listByOrg(orgId: string): Promise<Agent[]>;
  /** How many agents of the organization are in each status (0 for a status none is in). */
  countByStatus(orgId: string): Promise<Record<AgentStatus, number>>;
  /** The given agents of the organization (unknown ids skipped), most recently registered first. */
  listByIds(orgId: string, ids: readonly string[]): Promise<Agent[]>;
  /**
   * Renames the agent and replaces its operators' labels as a whole (each when given), counting
   * one revision, if it is still at `revision`: `changed` when another change was made since; null
   * when the agent is not in the organization.
   */
  edit(orgId: string, id: string, revision: number, change: AgentEdit): Promise<Agent | 'changed' | null>;
  /** Replaces the labels the agent reports of itself; null when it is unknown. */
  setReportedLabels(id: string, labels: Readonly<Record<string, string>>): Promise<Agent | null>;
  /** Keeps the digest of the agent's report just accepted (after what it reported is written). */
  recordReportDigest(id: string, kind: ReportKind, digest: string): Promise<void>;
  /**
   * Marks the agent revoked: the agent as it is now, and whether this call revoked it (`first`;
   * false when it was revoked before, also by a call at the same moment on another coordinator);
   * null when it does not exist in the organization.
   */
  revoke(orgId: string, id: string, at: string): Promise<{ agent: Agent; first: boolean } | null>;
  /**
   * Records a request nonce; false when the agent already used it within the window (replay).
   * Expired nonces are purged as a side effect.
   */
  rememberNonce(agentId: string, nonce: string, expiresAtMs: number, nowMs: number): Promise<boolean>;
  /** Its stream connected: `connected` (from pending or disconnected), lastSeenAt = at. False if revoked or unknown. */
  /** `agentVersion`: the version the agent says it runs when its stream opens (kept when absent). */
  markConnected(id: string, at: string, queueCapacity?: number, agentVersion?: string): Promise<boolean>;
  /**
   * The agents whose streams are open: lastSeenAt = at (one UPDATE for all of them), and
   * `connected` again for any another coordinator marked `disconnected` meanwhile (never a revoked one).
   */
  touch(ids: readonly string[], at: string): Promise<void>;
  /**
   * Its stream dropped and stayed down: `connected` → `disconnected`, lastSeenAt = when it dropped
   * (null: unchanged), unless it was seen after `unlessSeenAfter` (its stream is open on another
   * coordinator of the database, which connected or pinged it since).
   */
  markDisconnected(id: string, lastSeenAt: string | null, unlessSeenAfter: string): Promise<boolean>;
  /** Ids of the agents whose status is `connected`; with `notSeenSince`, only those not seen since then. */
  listConnectedIds(notSeenSince?: string): Promise<string[]>;
  /** Agents not revoked that were ever seen, with when they last were (for the metrics). */
  listLastSeen(): Promise<AgentLastSeen[]>;
}

export interface AgentLastSeen {
  id: string;
  name: string;
  /** ISO instant: refreshed at every ping while the agent's stream is open. */
  lastSeenAt: string;
}
