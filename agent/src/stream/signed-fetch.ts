import type { KeyObject } from 'node:crypto';
import { fetch, type Dispatcher } from 'undici';
import type { FetchLike } from 'eventsource';
import { signRequest } from '@drover/shared';
import type { ServerClock } from '../http/server-clock.js';

export interface StreamSigner {
  agentId: string;
  privateKey: KeyObject;
  dispatcher?: Dispatcher;
  /** Signs with the coordinator's time, and learns it from each answer's Date header. */
  clock?: ServerClock;
}

/**
 * The `fetch` given to EventSource: every request it makes (each connection attempt) is signed
 * afresh (new timestamp and nonce, docs/agent-protocol.md) over the path as sent. Redirects are refused:
 * the signature covers the path, so a redirected request could not be valid anyway.
 */
export function signedFetch(signer: StreamSigner): FetchLike {
  const { clock } = signer;
  return async (input, init) => {
    const url = new URL(input);
    const signature = signRequest({
      agentId: signer.agentId,
      privateKey: signer.privateKey,
      method: 'GET',
      path: `${url.pathname}${url.search}`,
      now: clock?.now() ?? Date.now(),
    });
    const sentAt = clock?.localTime() ?? 0;
    const res = await fetch(url, {
      method: 'GET',
      headers: { ...init.headers, ...signature },
      signal: init.signal as AbortSignal | undefined,
      redirect: 'error',
      cache: 'no-store',
      ...(signer.dispatcher ? { dispatcher: signer.dispatcher } : {}),
    });
    // A refused attempt's Date header corrects the clock before the next attempt.
    clock?.observeDateHeader(res.headers.get('date'), sentAt, clock.localTime());
    return res;
  };
}
