import type { FastifyInstance } from 'fastify';
import { registerJobDetailRoute } from './manage/jobs.js';
import { registerBatchDetailRoute } from './manage/batches.js';

/**
 * `GET /api/jobs/:id`: the dashboard address of a job, which trigger runs return as `statusUrl`
 * (outside /v1). A browser gets the dashboard's job page (routes/dashboard/, ahead of this
 * route); every other client, when signed in as a member of the job's organization, the same
 * JSON as `GET /v1/jobs/:id` (no redirect: one round trip, and clients that do not follow
 * redirects work too). An API token is refused (401): this is a console address, not part of
 * the public API.
 */
export async function apiJobRoutes(app: FastifyInstance): Promise<void> {
  registerJobDetailRoute(
    app,
    '/api/jobs/:id',
    'getJobAtStatusUrl',
    'A job (statusUrl): the dashboard page for a browser, the job detail JSON for other clients',
  );
  registerBatchDetailRoute(
    app,
    '/api/batches/:id',
    'getBatchAtStatusUrl',
    "A batch (a fanout: all trigger's statusUrl): the dashboard page for a browser, the batch JSON for other clients",
  );
}
