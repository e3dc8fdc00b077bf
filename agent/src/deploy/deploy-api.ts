import type { DeployReportRequest, DeployReportResponse } from '@drover/shared';
import { AgentError } from '../errors.js';
import { answerMessage, signedCall, type SignedCaller } from '../http/client.js';

/**
 * The agent's signed deployment calls (docs/ota.md). Both
 * throw AgentErrors: `unreachable` (no answer), `http_error` (an error answer), `bad_response`.
 */
export interface DeployApi {
  /**
   * `GET /v1/agent/deploy/desired`: the entries, not verified yet (see manifest-check.ts), and the
   * `X-Nonce` the request was signed with (a fresh entry carries it back as `request_nonce`).
   * `signal` aborts the request, its answer's body included.
   */
  fetchDesired(signal?: AbortSignal): Promise<{ entries: unknown[]; requestNonce: string }>;
  /** `POST /v1/agent/deploy/report`. */
  report(body: DeployReportRequest): Promise<DeployReportResponse>;
}

export function signedDeployApi(caller: SignedCaller): DeployApi {
  return {
    async fetchDesired(signal) {
      const answer = await signedCall(caller, 'GET', '/v1/agent/deploy/desired', undefined, signal ? { signal } : {});
      if (answer.status !== 200) {
        throw new AgentError(
          'http_error',
          `the coordinator answered HTTP ${answer.status} to the manifest request: ${answerMessage(answer)}`,
        );
      }
      const apps = (answer.body as { apps?: unknown } | null)?.apps;
      if (!Array.isArray(apps)) {
        throw new AgentError('bad_response', 'the coordinator answered the manifest request in an unknown shape');
      }
      return { entries: apps as unknown[], requestNonce: answer.nonce };
    },
    async report(body) {
      const answer = await signedCall(caller, 'POST', '/v1/agent/deploy/report', body);
      if (answer.status !== 200) {
        throw new AgentError(
          'http_error',
          `the coordinator answered HTTP ${answer.status} to the deployment report: ${answerMessage(answer)}`,
        );
      }
      return answer.body as DeployReportResponse;
    },
  };
}
