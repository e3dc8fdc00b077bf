import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { UUID_REGEX } from '@drover/shared';
import { sessionHook } from './auth/session.js';
import { surfaceBodyError } from './json-body.js';

/**
 * The order of refusals on every route: the caller first (401, CONTRACT §5 and the spec's
 * Authentication rules), then the body. Dashboard routes (tag `dashboard`, unless their schema
 * says `security: []`, as login does) get the session check in `onRequest`, before the body is
 * read; they are also described as needing a session in the OpenAPI document. Every route ends
 * its `preValidation` hooks with `surfaceBodyError`, after the agent signature and the API-token
 * hooks, so a body that is not JSON is refused only once the caller is known. Before all of
 * them, ids in the path are lower-cased.
 */
export function orderRefusals(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as { tags?: string[]; security?: unknown[] } | undefined;
    if (schema?.tags?.includes('dashboard') && schema.security?.length !== 0) {
      schema.security ??= [{ session: [] }];
      route.onRequest = [sessionHook, ...hooks(route.onRequest)];
    }
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
