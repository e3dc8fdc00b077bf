import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { UUID_REGEX } from '@drover/shared';
import { surfaceBodyError } from './json-body.js';

/**
 * The order of refusals on every route: the caller first (401: each route group's hook, see
 * app.ts), then the body. Every route ends its `preValidation` hooks with `surfaceBodyError`,
 * after the group's and its own hooks (the agent signature, which needs the raw body), so a body
 * that is not JSON is refused only once the caller is known. Ids in the path are lower-cased
 * first.
 */
export function orderRefusals(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    route.preValidation = [...hooks(route.preValidation), surfaceBodyError];
    if (route.url.includes(':')) route.onRequest = [lowercaseIds, ...hooks(route.onRequest)];
  });
}

/** Ids are UUIDs, stored lower-case: an upper-case spelling in the path names the same resource. */
function lowercaseIds(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  const params = request.params as Record<string, string>;
  for (const key of Object.keys(params)) {
    const value = params[key]!;
    if (UUID_REGEX.test(value)) params[key] = value.toLowerCase();
  }
  done();
}

function hooks<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}
