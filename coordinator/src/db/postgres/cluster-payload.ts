import type { ClusterEvent } from '../../domain/model/cluster-relay.js';

/**
 * The text of a cluster notification (db/postgres/notify-relay.ts): the sender's id, a space,
 * then events separated by `;`, each a one-letter code and its ids separated by `,`:
 * `3f9c1a20b4d7e6f1 c<agent>,<job>;f<job>`. A `g` (no ids) asks every receiver to read again
 * what it holds, as after a gap: the sender had to drop events it could not send.
 * PostgreSQL refuses a payload of 8000 bytes or more; `MAX_PAYLOAD_BYTES` stays well below.
 */
export const MAX_PAYLOAD_BYTES = 7_000;

/** The gap request, as an encoded event. */
export const GAP_REQUEST = 'g';

const CODES = {
  job_created: 'c',
  job_resent: 'u',
  job_pooled: 'p',
  cancel_requested: 'x',
  job_finished: 'f',
  agent_revoked: 'r',
  stream_opened: 'o',
  trigger_changed: 't',
} as const satisfies Record<ClusterEvent['type'], string>;

/** Ids travel as written: the coordinator's ids are UUIDs; anything else is refused, never sent. */
const ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The event as text, or null when one of its ids could not travel (never a coordinator's id). */
export function encodeEvent(event: ClusterEvent): string | null {
  const ids =
    event.type === 'job_created' || event.type === 'job_resent' || event.type === 'cancel_requested'
      ? [event.agentId, event.jobId]
      : event.type === 'job_pooled'
        ? [event.orgId, event.jobId]
        : event.type === 'job_finished'
          ? [event.jobId]
          : event.type === 'trigger_changed'
            ? [event.triggerId]
            : [event.agentId];
  if (!ids.every((id) => ID.test(id))) return null;
  return `${CODES[event.type]}${ids.join(',')}`;
}

/** One payload: the sender then its events. */
export function payloadOf(sender: string, encoded: readonly string[]): string {
  return `${sender} ${encoded.join(';')}`;
}

export interface DecodedPayload {
  sender: string;
  events: ClusterEvent[];
  /** The sender asked for a gap (it dropped events). */
  gap: boolean;
}

/** Reads a payload; events it does not understand (a newer coordinator's) are skipped. */
export function decodePayload(payload: string): DecodedPayload | null {
  const space = payload.indexOf(' ');
  if (space <= 0) return null;
  const sender = payload.slice(0, space);
  const events: ClusterEvent[] = [];
  let gap = false;
  for (const item of payload.slice(space + 1).split(';')) {
    if (item === GAP_REQUEST) {
      gap = true;
      continue;
    }
    const ids = item.slice(1).split(',');
    if (!ids.every((id) => ID.test(id))) continue;
    const [a, b] = ids as [string, string | undefined];
    switch (item[0]) {
      case CODES.job_created:
        if (b !== undefined) events.push({ type: 'job_created', agentId: a, jobId: b });
        break;
      case CODES.job_resent:
        if (b !== undefined) events.push({ type: 'job_resent', agentId: a, jobId: b });
        break;
      case CODES.job_pooled:
        if (b !== undefined) events.push({ type: 'job_pooled', orgId: a, jobId: b });
        break;
      case CODES.cancel_requested:
        if (b !== undefined) events.push({ type: 'cancel_requested', agentId: a, jobId: b });
        break;
      case CODES.job_finished:
        events.push({ type: 'job_finished', jobId: a });
        break;
      case CODES.agent_revoked:
        events.push({ type: 'agent_revoked', agentId: a });
        break;
      case CODES.stream_opened:
        events.push({ type: 'stream_opened', agentId: a });
        break;
      case CODES.trigger_changed:
        events.push({ type: 'trigger_changed', triggerId: a });
        break;
      default:
        break;
    }
  }
  return { sender, events, gap };
}
