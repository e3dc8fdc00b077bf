import {
  AGENT_ID_PATTERN,
  decodeRawKey,
  type AgentSelf,
  type EnrollRequest,
  type EnrollResponse,
} from '@drover/shared';
import { AgentError } from '../errors.js';
import { answerMessage, callCoordinator, signedCall, type SignedCaller } from './client.js';
import type { ServerClock } from './server-clock.js';

/** `POST /v1/agent/enroll`; a refused token is an `enrollment_refused` AgentError. */
export async function postEnroll(origin: string, body: EnrollRequest, clock?: ServerClock): Promise<EnrollResponse> {
  const answer = await callCoordinator(origin, 'POST', '/v1/agent/enroll', {
    body: JSON.stringify(body),
    ...(clock ? { clock } : {}),
  });
  if (answer.status === 401) {
    throw new AgentError(
      'enrollment_refused',
      `The coordinator refused the enrollment token: ${answerMessage(answer)}`,
    );
  }
  if (answer.status !== 201) {
    throw new AgentError('http_error', `Enrollment failed (HTTP ${answer.status}): ${answerMessage(answer)}`);
  }
  const res = answer.body as Partial<EnrollResponse> | null;
  if (
    typeof res !== 'object' ||
    res === null ||
    typeof res.agentId !== 'string' ||
    !AGENT_ID_PATTERN.test(res.agentId) ||
    typeof res.orgId !== 'string' ||
    typeof res.serverPublicKey !== 'string' ||
    !decodeRawKey(res.serverPublicKey)
  ) {
    throw new AgentError('bad_response', `The enrollment answer of ${origin} is not a Drover coordinator's answer`);
  }
  return { agentId: res.agentId, orgId: res.orgId, serverPublicKey: res.serverPublicKey };
}

/** `GET /v1/agent/me`, signed: proves the key and the clock are accepted. */
export async function getSelf(caller: SignedCaller): Promise<AgentSelf> {
  const answer = await signedCall(caller, 'GET', '/v1/agent/me');
  if (answer.status === 401) {
    throw new AgentError(
      'signature_refused',
      `The coordinator refused the agent's signed request: ${answerMessage(answer)}`,
    );
  }
  if (answer.status !== 200) {
    throw new AgentError('http_error', `GET /v1/agent/me failed (HTTP ${answer.status}): ${answerMessage(answer)}`);
  }
  const self = answer.body as Partial<AgentSelf> | null;
  if (typeof self !== 'object' || self === null || self.agentId !== caller.agentId || typeof self.status !== 'string') {
    throw new AgentError('bad_response', 'GET /v1/agent/me answered for another agent or in an unknown shape');
  }
  return self as AgentSelf;
}
