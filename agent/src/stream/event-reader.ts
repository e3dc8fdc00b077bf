import type { Readable } from 'node:stream';
import { createParser } from 'eventsource-parser';
import { formatBytes } from '../files/format.js';

/** One server-sent event, as an EventSource hands it over. */
export interface ServerSentEvent {
  /** The event's type (`message` when the server named none). */
  event: string;
  /** The last event id the stream carried, this event's or an earlier one's (empty: none yet). */
  id: string;
  data: string;
}

/**
 * The most one event may hold while it is read, its blank line not there yet (in characters:
 * bytes, for the ASCII JSON the coordinator sends): 16 MB. Without a cap, a stream whose event
 * never ends grows the agent's memory until the machine runs out. The largest event the
 * coordinator sends is a job's: its params, which its trigger request's body limit caps
 * (DROVER_BODY_LIMIT_BYTES, 1 MiB by default), and a download URL for each input file; deploy,
 * cancel and ping events take a few hundred bytes.
 */
export const MAX_EVENT_CHARS = 16_000_000;

/** An event grew past the cap without ending: the stream is dropped. */
export class OversizedEventError extends Error {
  constructor(maxChars: number) {
    super(`an event from the coordinator passed ${formatBytes(maxChars)} without ending (the most the agent reads)`);
    this.name = 'OversizedEventError';
  }
}

export interface EventHandlers {
  /** Each event, as it completes. */
  onEvent(event: ServerSentEvent): void;
  /** Each `retry:` field: the reconnection time the server asks for, in ms. */
  onRetry?(retryMs: number): void;
  /** Each piece of the body as it arrives (any bytes: part of an event, a comment). */
  onData?(): void;
  /** The cap of one event (MAX_EVENT_CHARS by default). */
  maxEventChars?: number;
}

/**
 * Reads a `text/event-stream` body (the WHATWG format: `event:`, `id:`, `data:` lines, a blank
 * line ending each event) and hands each event to `onEvent` as it completes. Resolves when the
 * body ends; rejects when it fails (the connection was cut, or the reading was aborted), and with
 * an OversizedEventError when an event grows past the cap (what the parser holds of it, read but
 * not ended).
 */
export async function readEvents(body: Readable, handlers: EventHandlers): Promise<void> {
  const maxEventChars = handlers.maxEventChars ?? MAX_EVENT_CHARS;
  let lastEventId = '';
  let oversized = false;
  const parser = createParser({
    onEvent(message) {
      if (message.id !== undefined) lastEventId = message.id;
      handlers.onEvent({ event: message.event ?? 'message', id: lastEventId, data: message.data });
    },
    ...(handlers.onRetry ? { onRetry: handlers.onRetry } : {}),
    onError(error) {
      if (error.type === 'max-buffer-size-exceeded') oversized = true;
    },
    maxBufferSize: maxEventChars,
  });
  body.setEncoding('utf8');
  for await (const chunk of body) {
    handlers.onData?.();
    parser.feed(chunk as string);
    // Leaving the loop destroys the body: the connection is closed.
    if (oversized) throw new OversizedEventError(maxEventChars);
  }
}
