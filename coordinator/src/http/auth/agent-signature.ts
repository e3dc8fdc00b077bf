import type { FastifyRequest } from 'fastify';
import {
  parseSignatureHeaders,
  SIGNATURE_TOLERANCE_MS,
  verifyParsedSignature,
  type SignatureFailure,
} from '@drover/shared';
import type { Agent } from '../../domain/model/agents.js';
import { agentPublicKey } from './agent-keys.js';
import { AppError } from '../../errors.js';
import { oncePerRequest } from './once-per-request.js';

type RefusalReason = SignatureFailure | 'unknown_agent' | 'revoked' | 'replayed_nonce';

const REASONS: Record<RefusalReason, string> = {
  missing_headers: 'Signed agent requests need X-Agent-Id, X-Timestamp, X-Nonce and X-Signature',
  duplicate_headers: 'X-Agent-Id, X-Timestamp, X-Nonce and X-Signature must each be sent once',
  malformed_agent_id: 'X-Agent-Id must be the agent id (a UUID) given at enrollment',
  malformed_timestamp: 'X-Timestamp must be Unix milliseconds',
  stale_timestamp: `X-Timestamp is more than ${SIGNATURE_TOLERANCE_MS / 1000} s away from the server clock`,
  malformed_nonce: 'X-Nonce must be 16 to 64 characters of [A-Za-z0-9_-]',
  malformed_signature: 'X-Signature must be standard base64 of a 64-byte Ed25519 signature',
  bad_signature: 'The request signature does not verify',
  unknown_agent: 'Unknown agent',
  revoked: 'The agent has been revoked',
  replayed_nonce: 'The nonce was already used',
};

/**
 * Authenticates a signed agent request (docs/agent-protocol.md) and returns its agent; every refusal is a
 * 401. Order: header formats and the timestamp window, the agent (known), the signature over the
 * method, the raw URL (path and query exactly as sent) and the raw body bytes, the agent's status
 * (so that only the key holder learns it was revoked), and last the nonce, which is remembered
 * only once everything else has passed so that forged requests cannot fill the replay store.
 * Nonces live in the database (`agent_nonces`), so several coordinators on one database refuse
 * the same replay. Calling it again for the same request returns the same agent (the nonce is
 * spent once).
 */
export const requireAgent: (request: FastifyRequest) => Promise<Agent> = oncePerRequest(authenticate);

/**
 * The same as a route `preValidation` hook: the signature is checked before the body is
 * validated, so an unsigned request gets a 401 rather than a 422 that describes the schema.
 */
export async function agentSignatureHook(request: FastifyRequest): Promise<void> {
  await requireAgent(request);
}

async function authenticate(request: FastifyRequest): Promise<Agent> {
  const { repos, clock } = request.server.ctx;
  const now = clock.now();
  const refuse = (reason: RefusalReason) => {
    request.log.info({ reason }, 'agent request refused');
    // The server's time, so that an agent whose clock is off can sign with corrected time
    // (docs/agent-protocol.md, "Clocks"); it is no secret: every answer's Date header tells it too.
    return new AppError('unauthorized', REASONS[reason], { details: { serverTime: now } });
  };
  const parsed = parseSignatureHeaders(request.headers, now);
  if (!parsed.ok) throw refuse(parsed.reason);
  const agent = await repos.agents.findById(parsed.value.agentId);
  if (!agent) throw refuse('unknown_agent');
  const publicKey = agentPublicKey(agent.publicKey);
  const signed =
    publicKey !== null &&
    verifyParsedSignature(publicKey, parsed.value, {
      method: request.method,
      path: request.url,
      body: request.rawBody,
    });
  if (!signed) throw refuse('bad_signature');
  if (agent.status === 'revoked') throw refuse('revoked');
  // A timestamp passes the window until timestampMs + tolerance. The nonce is kept one more
  // tolerance beyond that, so coordinators sharing the database with a clock up to 300 s off
  // still find it.
  const expiresAtMs = Math.max(now, parsed.value.timestampMs) + 2 * SIGNATURE_TOLERANCE_MS;
  const fresh = await repos.agents.rememberNonce(agent.id, parsed.value.nonce, expiresAtMs, now);
  if (!fresh) throw refuse('replayed_nonce');
  return agent;
}
