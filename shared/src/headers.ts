/** Header names of the signed agent protocol (docs/agent-protocol.md), lower-case as Node exposes them. */
export const AgentHeader = {
  agentId: 'x-agent-id',
  timestamp: 'x-timestamp',
  nonce: 'x-nonce',
  signature: 'x-signature',
} as const;
export type AgentHeader = (typeof AgentHeader)[keyof typeof AgentHeader];

/**
 * The agent's version, sent when it opens its stream (docs/agent-protocol.md §6.1): the
 * coordinator keeps it as the agent's `agentVersion`, which thus follows a self-update. Optional;
 * not part of the signature.
 */
export const AGENT_VERSION_HEADER = 'x-agent-version';
/** What X-Agent-Version may hold: 1 to 64 visible ASCII characters. */
export const AGENT_VERSION_HEADER_PATTERN = '^[!-~]{1,64}$';

/**
 * The agent's claim, when it opens its stream, that the coordinator still holds the workflows and
 * labels it last reported (docs/agent-protocol.md §6.1): the query parameter `reports`, the
 * SHA-256 (hex) of the exact body of its last accepted `PUT /v1/agent/workflows`, a dot, and the
 * same of `PUT /v1/agent/labels`. A coordinator that checks it says so in the answer's
 * AGENT_REPORTS_HEADER (`checked`), and refuses a claim it does not match with 409
 * `reports_outdated`; an agent sends it only to a coordinator that said so, and otherwise reports
 * both before each connect.
 */
export const AGENT_REPORTS_QUERY_PATTERN = '^[0-9a-f]{64}[.][0-9a-f]{64}$';
export const AGENT_REPORTS_HEADER = 'x-agent-reports';
export const AGENT_REPORTS_CHECKED = 'checked';

/** First line of every signed request's canonical string. */
export const SIGNATURE_SCHEME = 'DROVER-ED25519-V1';

/** A request whose X-Timestamp is further than this from the verifier's clock is refused. */
export const SIGNATURE_TOLERANCE_MS = 300_000;

export const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;

export const API_TOKEN_PREFIX = 'drv_';
export const ENROLLMENT_TOKEN_PREFIX = 'drve_';
