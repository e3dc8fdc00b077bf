import type { FastifyInstance } from 'fastify';

// TODO(issue 2): not yet written.
export async function agentEnrollRoutes(_app: FastifyInstance): Promise<void> {}
