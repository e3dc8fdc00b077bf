import type { FastifyInstance } from 'fastify';

// TODO(issue 2): not yet written.
export async function auditRoutes(_app: FastifyInstance): Promise<void> {}
