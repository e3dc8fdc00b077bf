import type { KeyObject } from 'node:crypto';
import { fetch, type Dispatcher } from 'undici';
import type { FetchLike } from 'eventsource';
import { signRequest } from '@drover/shared';

export interface StreamSigner {
  agentId: string;
  privateKey: KeyObject;
  dispatcher?: Dispatcher;
}

/**
 * The `fetch` given to EventSource: every request it makes (each connection attempt) is signed
 * afresh (new timestamp and nonce, CONTRACT §5) over the path as sent. Redirects are refused:
 * the signature covers the path, so a redirected request could not be valid anyway.
 */
export function signedFetch(signer: StreamSigner): FetchLike {
  return (input, init) => {
    const url = new URL(input);
    const signature = signRequest({
      agentId: signer.agentId,
      privateKey: signer.privateKey,
      method: 'GET',
      path: `${url.pathname}${url.search}`,
    });
    return fetch(url, {
      method: 'GET',
      headers: { ...init.headers, ...signature },
      signal: init.signal as AbortSignal | undefined,
      redirect: 'error',
      cache: 'no-store',
      ...(signer.dispatcher ? { dispatcher: signer.dispatcher } : {}),
    });
  };
}
