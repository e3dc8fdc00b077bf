import { signRequest } from '@drover/shared';
import type { TestAgent } from './agent.js';

/** One parsed server-sent event. */
export interface SseEvent {
  event: string;
  id: string | undefined;
  data: string;
}

export interface AgentStream {
  status: number;
  headers: Headers;
  /** Every event received so far, in order. */
  events: SseEvent[];
  /** Resolves with the next event (after those already taken) matching `match`, or rejects after `timeoutMs`. */
  next(match?: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** The parsed data of the next `job` event. */
  nextJob<T = Record<string, any>>(timeoutMs?: number): Promise<T>;
  /** Resolves when the server ended the stream (or the connection failed). */
  ended: Promise<void>;
  readonly isEnded: boolean;
  /** Closes the connection from the client side. */
  close(): void;
  /** The body of a refused (non-200) answer. */
  text?: string;
}

/**
 * Opens `GET /v1/agent/stream` as `agent` with fresh signed headers (Node's fetch, i.e. undici)
 * and parses the text/event-stream as it arrives. `origin` is the coordinator's root URL.
 */
export async function openAgentStream(
  origin: string,
  agent: Pick<TestAgent, 'agentId' | 'privateKey'>,
  options: { path?: string; headers?: Record<string, string> } = {},
): Promise<AgentStream> {
  const path = options.path ?? '/v1/agent/stream';
  const controller = new AbortController();
  const headers = {
    ...signRequest({ agentId: agent.agentId, privateKey: agent.privateKey, method: 'GET', path }),
    accept: 'text/event-stream',
    ...options.headers,
  };
  const res = await fetch(`${origin}${path}`, { headers, signal: controller.signal });
  const events: SseEvent[] = [];
  let taken = 0;
  let isEnded = false;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  const { promise: ended, resolve: resolveEnded } = Promise.withResolvers<void>();
  const finish = () => {
    isEnded = true;
    resolveEnded();
    wake();
  };

  const stream: AgentStream = {
    status: res.status,
    headers: res.headers,
    events,
    ended,
    get isEnded() {
      return isEnded;
    },
    close: () => controller.abort(),
    next(match = () => true, timeoutMs = 5_000) {
      return new Promise<SseEvent>((resolve, reject) => {
        const check = () => {
          while (taken < events.length) {
            const e = events[taken++]!;
            if (match(e)) {
              done();
              resolve(e);
              return;
            }
          }
          if (isEnded) {
            done();
            reject(new Error('the stream ended before the expected event'));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no matching event within ${timeoutMs} ms`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async nextJob<T>(timeoutMs?: number) {
      const e = await stream.next((ev) => ev.event === 'job', timeoutMs);
      return JSON.parse(e.data) as T;
    },
  };

  if (res.status !== 200 || !res.body) {
    stream.text = await res.text();
    finish();
    return stream;
  }

  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const parsed = parseBlock(block);
          if (parsed) events.push(parsed);
        }
        wake();
      }
    } catch {
      // aborted by close(), or the connection was cut
    } finally {
      finish();
    }
  })();
  return stream;
}

/** One event block; null for a comment-only block. */
function parseBlock(block: string): SseEvent | null {
  let event = 'message';
  let id: string | undefined;
  const data: string[] = [];
  let any = false;
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    any = true;
    if (field === 'event') event = value;
    else if (field === 'id') id = value;
    else if (field === 'data') data.push(value);
  }
  return any ? { event, id, data: data.join('\n') } : null;
}
