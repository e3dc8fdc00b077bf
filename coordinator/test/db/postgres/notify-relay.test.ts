import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, encodeEvent, MAX_PAYLOAD_BYTES, payloadOf } from '../../../src/db/postgres/cluster-payload.js';
import { PostgresNotifyRelay } from '../../../src/db/postgres/notify-relay.js';
import type { ClusterEvent } from '../../../src/domain/model/cluster-relay.js';
import { eventually } from '../../../../test/helpers/poll.js';
import { freshPostgresDatabase, type TestDatabase } from '../../postgres/database.js';

/**
 * The cluster relay on PostgreSQL (LISTEN/NOTIFY): what one coordinator publishes reaches the
 * others, in order, never itself; bursts share notifications; a dropped connection comes back,
 * with a gap told to the listeners and the events published meanwhile sent after.
 */

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

let database: TestDatabase;
const relays: PostgresNotifyRelay[] = [];

beforeAll(async () => {
  database = await freshPostgresDatabase();
});
afterEach(async () => {
  for (const relay of relays.splice(0)) await relay.close();
});
afterAll(async () => {
  await database.drop();
});

async function relay(options: { url?: string; heartbeatMs?: number } = {}): Promise<PostgresNotifyRelay> {
  const r = new PostgresNotifyRelay({
    url: database.url,
    logger: quiet,
    reconnectBaseMs: 20,
    reconnectCapMs: 100,
    ...options,
  });
  relays.push(r);
  await r.start();
  return r;
}

/**
 * A TCP proxy to the database whose `freeze` stalls every connection open through it (nothing
 * forwarded either way, nothing closed), as a NAT that forgot them would; later ones pass.
 */
async function freezingProxy(target: URL) {
  const pairs: net.Socket[][] = [];
  const sockets: net.Socket[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop);
    upstream.on('error', drop);
    pairs.push([client, upstream]);
    sockets.push(client, upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target.href);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.href,
    freeze() {
      for (const [client, upstream] of pairs.splice(0)) {
        client!.unpipe();
        upstream!.unpipe();
        client!.pause();
        upstream!.pause();
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/** Everything a relay hears, in order. */
function record(r: PostgresNotifyRelay): { events: ClusterEvent[]; gaps: number } {
  const seen = { events: [] as ClusterEvent[], gaps: 0 };
  r.subscribe({ event: (e) => seen.events.push(e), gap: () => (seen.gaps += 1) });
  return seen;
}

describe('cluster payloads', () => {
  it('carry every event type and its ids, and skip what they do not understand', () => {
    const agentId = randomUUID();
    const jobId = randomUUID();
    const events: ClusterEvent[] = [
      { type: 'job_created', agentId, jobId },
      { type: 'job_pooled', orgId: agentId, jobId },
      { type: 'cancel_requested', agentId, jobId },
      { type: 'job_finished', jobId },
      { type: 'agent_revoked', agentId },
      { type: 'stream_opened', agentId },
      { type: 'trigger_changed', triggerId: jobId },
    ];
    const text = payloadOf('sender1', [...events.map((e) => encodeEvent(e)!), 'zsomething-newer', 'g']);
    expect(decodePayload(text)).toEqual({ sender: 'sender1', events, gap: true });
    expect(decodePayload('no-space')).toBeNull();
  });

  it('refuses ids that could break the framing', () => {
    expect(encodeEvent({ type: 'job_finished', jobId: 'a;b' })).toBeNull();
    expect(encodeEvent({ type: 'agent_revoked', agentId: 'a b' })).toBeNull();
  });
});

describe('the LISTEN/NOTIFY relay', () => {
  it('delivers what one coordinator publishes to the others, never back to itself', async () => {
    const [a, b, c] = [await relay(), await relay(), await relay()];
    const [seenA, seenB, seenC] = [record(a), record(b), record(c)];
    const event: ClusterEvent = { type: 'job_created', agentId: randomUUID(), jobId: randomUUID() };
    a.publish(event);
    await eventually(() => seenB.events.length === 1 && seenC.events.length === 1, 5_000, 'the event at b and c');
    expect(seenB.events).toEqual([event]);
    expect(seenC.events).toEqual([event]);
    // A later event from b reaches a and c; a heard nothing of its own.
    b.publish({ type: 'job_finished', jobId: event.jobId });
    await eventually(() => seenA.events.length === 1 && seenC.events.length === 2, 5_000, 'the end at a and c');
    expect(seenA.events).toEqual([{ type: 'job_finished', jobId: event.jobId }]);
  });

  it('sends a burst in order, in notifications that stay under the size limit', async () => {
    const [a, b] = [await relay(), await relay()];
    const seen = record(b);
    const sent: ClusterEvent[] = Array.from({ length: 5_000 }, () => ({ type: 'job_finished', jobId: randomUUID() }));
    for (const e of sent) a.publish(e);
    await eventually(() => seen.events.length === sent.length, 10_000, 'every event of the burst');
    expect(seen.events).toEqual(sent);
    // 5,000 ids of 36 characters: far fewer notifications than events.
    expect(sent.length * 38).toBeGreaterThan(20 * MAX_PAYLOAD_BYTES);
  });

  it('comes back after its connection drops: a gap for the listeners, and what was published meanwhile', async () => {
    const [a, b] = [await relay(), await relay()];
    const seenA = record(a);
    const seenB = record(b);
    b.breakConnection();
    await eventually(() => seenB.gaps === 1 && b.connected, 5_000, 'b to reconnect and tell of the gap');
    const event: ClusterEvent = { type: 'trigger_changed', triggerId: randomUUID() };
    a.publish(event);
    await eventually(() => seenB.events.length === 1, 5_000, 'the event at b after its reconnect');
    // a published while its own connection was down: sent once it is back.
    a.breakConnection();
    const later: ClusterEvent = { type: 'agent_revoked', agentId: randomUUID() };
    a.publish(later);
    await eventually(() => seenB.events.length === 2, 5_000, 'the event a published while reconnecting');
    expect(seenB.events).toEqual([event, later]);
    expect(seenA.gaps).toBe(1);
  });

  it('gives up opening a connection that a server takes and never answers, rather than wait for good', async () => {
    const taken: net.Socket[] = [];
    const silent = net.createServer((socket) => void taken.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = new URL(database.url);
      url.hostname = '127.0.0.1';
      url.port = String((silent.address() as net.AddressInfo).port);
      const r = new PostgresNotifyRelay({ url: url.href, logger: quiet, connectTimeoutMs: 200 });
      await expect(r.start()).rejects.toThrow(/timeout/i);
      await r.close();
    } finally {
      for (const socket of taken) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('drops a connection that stalls without breaking, and comes back with a gap for the listeners', async () => {
    const proxy = await freezingProxy(new URL(database.url));
    try {
      const a = await relay();
      const b = await relay({ url: proxy.url, heartbeatMs: 200 });
      const seenB = record(b);
      proxy.freeze();
      const lost: ClusterEvent = { type: 'trigger_changed', triggerId: randomUUID() };
      a.publish(lost);
      await eventually(
        () => seenB.gaps === 1 && b.connected,
        5_000,
        'b to notice the stall, reconnect and tell of the gap',
      );
      const event: ClusterEvent = { type: 'agent_revoked', agentId: randomUUID() };
      a.publish(event);
      await eventually(() => seenB.events.length > 0, 5_000, 'the event at b after its reconnect');
      expect(seenB.events).toEqual([event]);
    } finally {
      for (const r of relays.splice(0)) await r.close();
      await proxy.close();
    }
  });
});
