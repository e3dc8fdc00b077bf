import type { FastifyInstance } from 'fastify';
import { apiTokenHook } from '../../auth/api-token.js';
import { withSecurity } from '../route-group.js';
import { discoveryRoutes } from './discovery.js';
import { storageRoutes } from './storage.js';
import { triggerRunRoutes } from './trigger-run.js';

/**
 * The public API (docs/trigger-runs.md, docs/storage.md): every route needs an API token, checked
 * by this group's `onRequest` hook before anything else of the request; a route here cannot forget
 * it. What the token may do (its grants, the read limit) is each route's.
 */
export async function publicApiRoutes(app: FastifyInstance): Promise<void> {
  withSecurity(app, [{ apiToken: [] }]);
  app.addHook('onRequest', apiTokenHook);
  await app.register(discoveryRoutes);
  await app.register(triggerRunRoutes);
  await app.register(storageRoutes);
}
