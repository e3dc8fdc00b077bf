import { randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();

/**
 * A UUID version 7 (RFC 9562): the first 48 bits are `nowMs`, the rest random. Rows keyed by
 * such ids are inserted near the end of their primary-key B-tree instead of at random places,
 * which halves the cost of an insert into a large table (jobs; docs/performance.md). Agents and
 * device bindings have them too: an index that begins with the agent (jobs by agent, bindings
 * by agent) or the binding (update jobs) then holds the agents enrolled, and the devices bound,
 * at about the same time side by side, which is the order a publish writes in
 * (docs/performance.md, "OTA at 100,000 devices").
 */
export function newTimeOrderedId(nowMs: number): string {
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, V the variant
  return `${timePrefix(Math.max(0, Math.floor(nowMs)))}7${random.slice(15)}`;
}

// The id's first 48 bits as `xxxxxxxx-xxxx-`, kept for the last millisecond asked: a burst of
// trigger calls in one millisecond formats it once.
let prefixMs = -1;
let prefix = '';
function timePrefix(ms: number): string {
  if (ms !== prefixMs) {
    const time = ms.toString(16).padStart(12, '0').slice(-12);
    prefix = `${time.slice(0, 8)}-${time.slice(8)}-`;
    prefixMs = ms;
  }
  return prefix;
}

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const UUID_RE = new RegExp(UUID_PATTERN);
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID_RE.test(value);
