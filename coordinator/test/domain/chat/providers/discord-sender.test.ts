import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryFailure, type ChatDelivery } from '../../../../src/domain/chat/notifications/sender.js';
import { DiscordSender } from '../../../../src/domain/chat/providers/senders/discord-sender.js';

/** Discord's REST API where a channel takes messages and never answers. */
describe('DiscordSender and a channel that does not answer', () => {
  const received: string[] = [];
  const server = http.createServer((req) => {
    received.push(`${req.method} ${req.url}`);
    // Never answered: the request hangs until the client gives up.
  });
  let apiUrl = '';

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const delivery = (n: number): ChatDelivery => ({
    target: { type: 'channel', teamId: '1180000000000000777', channelId: '1180000000000000555' },
    payload: { kind: 'chat_answer', text: `message ${n}` },
    token: null,
    publicUrl: 'https://drover.example.com',
  });

  it("gives up each message within its timeout, its wait behind the channel's earlier messages included", async () => {
    const sender = new DiscordSender(
      {
        applicationId: '1180000000000000001',
        publicKey: '0'.repeat(64),
        clientSecret: 'secret',
        botToken: 'bot-token',
        apiUrl,
        authorizeUrl: 'https://discord.example/oauth2/authorize',
      },
      300,
    );
    // The REST client sends one channel's messages one after the other: the second and third
    // wait behind the first, which is never answered. Each is given up after 300 ms, where they
    // waited 300 ms each in turn (10 s each with the client's own timeout: 30 s for the third, far
    // past this test's 5 s).
    const outcomes = await Promise.allSettled([1, 2, 3].map((n) => sender.send(delivery(n))));
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      const failure = (outcome as PromiseRejectedResult).reason as DeliveryFailure;
      expect(failure).toBeInstanceOf(DeliveryFailure);
      expect(failure).toMatchObject({ retry: 'later', message: 'Discord did not answer within 0.3 s' });
    }
    expect(received[0]).toBe('POST /api/v10/channels/1180000000000000555/messages');
  });
});
