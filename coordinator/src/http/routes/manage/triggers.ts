import type { FastifyInstance } from 'fastify';

// TODO(issue 2): not yet written.
export async function triggerRoutes(_app: FastifyInstance): Promise<void> {}
