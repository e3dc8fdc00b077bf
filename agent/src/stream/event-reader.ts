import type { Readable } from 'node:stream';
import { createParser } from 'eventsource-parser';

/** One server-sent event, as an EventSource hands it over. */
export interface ServerSentEvent {
  /** The event's type (`message` when the server named none). */
  event: string;
  /** The last event id the stream carried, this event's or an earlier one's (empty: none yet). */
  id: string;
  data: string;
}

/**
 * Reads a `text/event-stream` body (the WHATWG format: `event:`, `id:`, `data:` lines, a blank
 * line ending each event) and hands each event to `onEvent` as it completes, and each `retry:`
 * field (the reconnection time the server asks for, ms) to `onRetry`. Resolves when the body
 * ends; rejects when it fails (the connection was cut, or the reading was aborted).
 */
export async function readEvents(
  body: Readable,
  onEvent: (event: ServerSentEvent) => void,
  onRetry?: (retryMs: number) => void,
): Promise<void> {
  let lastEventId = '';
  const parser = createParser({
    onEvent(message) {
      if (message.id !== undefined) lastEventId = message.id;
      onEvent({ event: message.event ?? 'message', id: lastEventId, data: message.data });
    },
    ...(onRetry ? { onRetry } : {}),
  });
  body.setEncoding('utf8');
  for await (const chunk of body) parser.feed(chunk as string);
}
