import type { KeyObject } from 'node:crypto';
import { AGENT_VERSION_HEADER, signRequest } from '@drover/shared';
import { AGENT_VERSION } from '../version.js';
import { sendRequest, type HttpResponse } from '../http/request.js';
import type { ServerClock } from '../http/server-clock.js';

export interface StreamSigner {
  agentId: string;
  privateKey: KeyObject;
  /** Signs with the coordinator's time, and learns it from each answer's Date header. */
  clock?: ServerClock;
}

/**
 * Asks for the event stream at `url`, signed afresh (new timestamp and nonce,
 * docs/agent-protocol.md) over the path as sent, on a connection of its own. Resolves with the
 * answer once its headers arrived, whatever its status; a redirect is an answer like any other
 * (the signature covers the path, so a redirected request could not be valid anyway).
 */
export async function openSignedStream(signer: StreamSigner, url: URL, signal: AbortSignal): Promise<HttpResponse> {
  const { clock } = signer;
  const signature = signRequest({
    agentId: signer.agentId,
    privateKey: signer.privateKey,
    method: 'GET',
    path: `${url.pathname}${url.search}`,
    now: clock?.now() ?? Date.now(),
  });
  const sentAt = clock?.localTime() ?? 0;
  const res = await sendRequest(url, {
    method: 'GET',
    headers: {
      accept: 'text/event-stream',
      'cache-control': 'no-cache',
      [AGENT_VERSION_HEADER]: AGENT_VERSION,
      ...signature,
    },
    signal,
    ownConnection: true,
  });
  // A refused attempt's Date header corrects the clock before the next attempt.
  clock?.observeDateHeader(res.headers.date, sentAt, clock.localTime());
  return res;
}
