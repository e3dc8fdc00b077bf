import { Queue } from 'bullmq';
import Fastify from 'fastify';

/**
 * The peer's API (bench/peer/README.md): what a Node user builds instead of Drover. `POST /run`
 * puts the body on a BullMQ queue and answers 202 with the job's id; no authentication, no
 * validation of the body, no rate limit, no idempotency. Its best settings: Fastify without a
 * logger, one Queue (one Redis connection) for every request, no job retention beyond BullMQ's
 * defaults.
 */
export interface PeerServer {
  url: string;
  queue: Queue;
  close(): Promise<void>;
}

export const PEER_QUEUE = 'runs';

export async function startPeerServer(redisPort: number): Promise<PeerServer> {
  const queue = new Queue(PEER_QUEUE, { connection: { host: '127.0.0.1', port: redisPort } });
  const app = Fastify({ logger: false });
  app.post('/run', async (request, reply) => {
    const job = await queue.add('run', request.body);
    return reply.code(202).send({ jobId: job.id, status: 'waiting' });
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url,
    queue,
    async close() {
      await app.close();
      await queue.close();
    },
  };
}
