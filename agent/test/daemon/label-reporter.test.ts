import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { generateEd25519KeyPair, privateKeyFromBase64 } from '@drover/shared';
import { LabelReporter } from '../../src/daemon/label-reporter.js';
import type { LabelStatus } from '../../src/status/daemon-status.js';
import { captureLogger } from '../log-capture.js';

const keys = generateEd25519KeyPair();
const agentId = '6f1c2b8e-4d3a-4f5b-9c7d-0e1f2a3b4c5d';

/** A stand-in coordinator answering `PUT /v1/agent/labels` with what the test sets. */
async function coordinator() {
  const state = { status: 200, body: {} as unknown, bodies: [] as unknown[], paths: [] as string[] };
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      state.paths.push(`${req.method} ${req.url} ${req.headers['x-agent-id']}`);
      state.bodies.push(JSON.parse(text));
      res.writeHead(state.status, { 'content-type': 'application/json' }).end(JSON.stringify(state.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { origin, state };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function reporter() {
  const fake = await coordinator();
  const { logger, records } = captureLogger();
  const changes: LabelStatus[] = [];
  const labels = new LabelReporter({
    labels: { site: 'berlin', os: 'linux', arch: 'x64' },
    caller: { origin: fake.origin, agentId, privateKey: privateKeyFromBase64(keys.privateKey) },
    logger,
    onChange: (status) => changes.push(status),
  });
  return { fake, labels, records, changes };
}

describe('the labels report', () => {
  it('sends the labels signed, keeps what the coordinator made of them, and logs each outcome once', async () => {
    const { fake, labels, records, changes } = await reporter();
    expect(labels.status).toEqual({
      reported: { arch: 'x64', os: 'linux', site: 'berlin' },
      state: 'pending',
      effective: null,
      problem: null,
    });
    fake.state.body = {
      labels: { arch: 'x64', os: 'linux', site: 'munich' },
      reportedLabels: { arch: 'x64', os: 'linux', site: 'berlin' },
      operatorLabels: { site: 'munich' },
    };
    await labels.report();
    await labels.report(); // a reconnect: sent again, not logged again
    expect(fake.state.paths).toEqual([`PUT /v1/agent/labels ${agentId}`, `PUT /v1/agent/labels ${agentId}`]);
    expect(fake.state.bodies[0]).toEqual({ labels: { arch: 'x64', os: 'linux', site: 'berlin' } });
    expect(labels.status).toMatchObject({ state: 'accepted', effective: { site: 'munich' } });
    expect(changes.at(-1)).toEqual(labels.status);
    expect(records.map((r) => [r.level, r.msg])).toEqual([
      [
        30,
        "reported the labels to the coordinator: arch=x64,os=linux,site=berlin; the agent carries arch=x64,os=linux,site=munich there (an operator's label wins a clash)",
      ],
    ]);
  });

  it('says once that an older coordinator (404) does not take labels, and goes on', async () => {
    const { fake, labels, records } = await reporter();
    fake.state.status = 404;
    fake.state.body = { statusCode: 404, code: 'not_found', message: 'Route PUT:/v1/agent/labels not found' };
    await labels.report();
    await labels.report();
    expect(labels.status).toMatchObject({ state: 'unsupported', effective: null });
    expect(records.map((r) => [r.level, r.msg])).toEqual([
      [
        40,
        'this coordinator does not take labels (PUT /v1/agent/labels answered HTTP 404); upgrade it to use them. The agent runs its jobs as before',
      ],
    ]);
    // Upgraded meanwhile: taken at the next connect.
    fake.state.status = 200;
    fake.state.body = { labels: { arch: 'x64', os: 'linux', site: 'berlin' } };
    await labels.report();
    expect(labels.status.state).toBe('accepted');
    expect(records.at(-1)!.msg).toBe('reported the labels to the coordinator: arch=x64,os=linux,site=berlin');
  });

  it('logs a refusal (422) as an error with its details, and goes on', async () => {
    const { fake, labels, records } = await reporter();
    fake.state.status = 422;
    fake.state.body = {
      statusCode: 422,
      code: 'validation_failed',
      message: 'Validation failed',
      details: [{ path: 'body.labels.site', message: 'not allowed here' }],
    };
    await labels.report();
    expect(labels.status).toMatchObject({ state: 'refused', problem: 'body.labels.site: not allowed here' });
    expect(records.map((r) => [r.level, r.msg])).toEqual([
      [50, 'the coordinator refused the labels: body.labels.site: not allowed here'],
    ]);
  });

  it('throws on any other answer (retried at the next connect), the status left as it was', async () => {
    const { fake, labels, records } = await reporter();
    fake.state.status = 503;
    fake.state.body = { statusCode: 503, code: 'unavailable', message: 'shutting down' };
    await expect(labels.report()).rejects.toThrow('the labels report failed (HTTP 503: shutting down)');
    expect(labels.status.state).toBe('pending');
    expect(records).toEqual([]);
  });
});
