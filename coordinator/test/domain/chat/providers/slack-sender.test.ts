import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ChatDelivery } from '../../../../src/domain/chat/notifications/sender.js';
import { SlackSender } from '../../../../src/domain/chat/providers/senders/slack-sender.js';

/** The app's settings with its Web API at `url`. */
const config = (url: string) => ({
  clientId: '1111.2222',
  clientSecret: 'secret',
  signingSecret: 'signing-secret',
  apiUrl: url,
  authorizeUrl: 'https://slack.example/oauth/v2/authorize',
});
const delivery: ChatDelivery = {
  target: { type: 'channel', teamId: 'T0DROVER1', channelId: 'C0DEPLOYS' },
  payload: { kind: 'chat_answer', text: 'hello' },
  token: 'xoxb-test-bot-token',
  publicUrl: 'https://drover.example.com',
};

/**
 * Slack's Web API answering with `response_metadata.warnings`, as it does for a request it took
 * but wants changed (https://api.slack.com/web#responses), and not reachable at all: what the Web
 * API client says of either goes to the coordinator's log, never to the console.
 */
describe("SlackSender and the Web API client's own messages", () => {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ok: true,
          channel: 'C0DEPLOYS',
          ts: '1700000000.000100',
          warning: 'superfluous_charset',
          response_metadata: { warnings: ['superfluous_charset'] },
        }),
      );
    });
  });
  let apiUrl = '';
  const lines: { level: number; msg: string; provider?: string }[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')));
        done();
      },
    }),
  );

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  afterEach(() => {
    vi.restoreAllMocks();
    lines.length = 0;
  });

  const consoleSpies = () =>
    (['debug', 'info', 'warn', 'error', 'log'] as const).map((level) => vi.spyOn(globalThis.console, level));

  it("logs Slack's warnings and a request that failed as the coordinator's JSON lines, writing nothing to the console", async () => {
    const spies = consoleSpies();
    await new SlackSender(config(apiUrl), log).send(delivery);
    // A port nothing listens on: the request fails, the delivery is retried later.
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/api/`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(new SlackSender(config(closedUrl), log).send(delivery)).rejects.toMatchObject({ retry: 'later' });

    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, provider: 'slack', msg: expect.stringMatching(/superfluous_charset/) }),
      expect.objectContaining({ level: 40, provider: 'slack', msg: expect.stringMatching(/http request failed/) }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('xoxb-');
  });
});

/** Slack's Web API down for maintenance: a 503 that says when to come back (RFC 9110 §10.2.3). */
describe('SlackSender and a 503 with Retry-After', () => {
  let retryAfter = '120';
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(503, { 'retry-after': retryAfter, 'content-type': 'text/plain' });
      res.end('down for maintenance');
    });
  });
  let apiUrl = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const send = () => new SlackSender(config(apiUrl), pino({ level: 'silent' })).send(delivery);

  it('is retried after the wait it asks for; `Retry-After: 0` leaves the wait to the outbox', async () => {
    await expect(send()).rejects.toMatchObject({ retry: 'later', retryAfterMs: 120_000 });
    retryAfter = '0';
    await expect(send()).rejects.toMatchObject({ retry: 'later', retryAfterMs: null });
  });
});
