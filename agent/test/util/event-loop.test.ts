import dc from 'node:diagnostics_channel';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { readText, sendRequest } from '../../src/http/request.js';
import { afterPendingImmediates } from '../../src/util/event-loop.js';

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
});

describe('afterPendingImmediates', () => {
  it('resolves after an immediate queued later in the same turn', async () => {
    const order: string[] = [];
    const waited = afterPendingImmediates().then(() => order.push('waited'));
    await Promise.resolve();
    setImmediate(() => order.push('queued after'));
    await waited;
    expect(order).toEqual(['queued after', 'waited']);
  });

  it('resolves only once a request made in the same turn is written on a reused connection', async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`;
    await readText((await sendRequest(url, { method: 'GET' })).body); // the connection is now idle, to be reused

    const order: string[] = [];
    const started = ({ request }: { request: http.ClientRequest }) => {
      expect(request.reusedSocket).toBe(true);
      request.once('finish', () => order.push('request written'));
    };
    dc.subscribe('http.client.request.start', started as (message: unknown) => void);
    try {
      const waited = afterPendingImmediates().then(() => order.push('waited'));
      // Made from a microtask after the wait began, as the report sender makes a job's start report.
      const answered = Promise.resolve().then(() => sendRequest(url, { method: 'POST', body: '{}' }));
      await waited;
      expect(order).toEqual(['request written', 'waited']);
      await readText((await answered).body);
    } finally {
      dc.unsubscribe('http.client.request.start', started as (message: unknown) => void);
    }
  });
});
