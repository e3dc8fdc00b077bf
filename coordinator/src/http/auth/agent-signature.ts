import type { FastifyRequest } from 'fastify';
import {
  parseSignatureHeaders,
  publicKeyFromBase64,
  SIGNATURE_TOLERANCE_MS,
  verifyParsedSignature,
  type SignatureFailure,
} from '@drover/shared';
import type { Agent } from '../../db/repositories/agents.js';
import { unauthorized } from '../../errors.js';

const REASONS: Record<SignatureFailure | 'unknown_agent' | 'revoked' | 'replayed_nonce', string> = {
  missing_headers: 'Signed agent requests need X-Agent-Id, X-Timestamp, X-Nonce and X-Signature',
  malformed_timestamp: 'X-Timestamp must be Unix milliseconds',
  stale_timestamp: `X-Timestamp is more than ${SIGNATURE_TOLERANCE_MS / 1000} s away from the server clock`,
  malformed_nonce: 'X-Nonce must be 16 to 64 characters of [A-Za-z0-9_-]',
  bad_signature: 'The request signature does not verify',
  unknown_agent: 'Unknown agent',
  revoked: 'The agent has been revoked',
  replayed_nonce: 'The nonce was already used',
};

/**
 * Authenticates a signed agent request (CONTRACT §5): header formats, timestamp window, the
 * agent (known, not revoked), the signature over the raw body, then the nonce, which is only
 * remembered once everything else has passed so that forged requests cannot fill the cache.
 */
export async function requireAgent(request: FastifyRequest): Promise<Agent> {
  const { repos, clock } = request.server.ctx;
  const now = clock.now();
  const refuse = (reason: keyof typeof REASONS) => {
    request.log.info({ reason }, 'agent request refused');
    return unauthorized(REASONS[reason]);
  };
  const parsed = parseSignatureHeaders(request.headers, now);
  if (!parsed.ok) throw refuse(parsed.reason);
  const agent = await repos.agents.findById(parsed.value.agentId);
  if (!agent) throw refuse('unknown_agent');
  if (agent.status === 'revoked') throw refuse('revoked');
  const publicKey = publicKeyFromBase64(agent.publicKey);
  const signed =
    publicKey !== null &&
    verifyParsedSignature(publicKey, parsed.value, { method: request.method, path: request.url, body: request.rawBody });
  if (!signed) throw refuse('bad_signature');
  const fresh = await repos.agents.rememberNonce(agent.id, parsed.value.nonce, now + 2 * SIGNATURE_TOLERANCE_MS, now);
  if (!fresh) throw refuse('replayed_nonce');
  return agent;
}
