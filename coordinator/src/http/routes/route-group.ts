import type { FastifyInstance } from 'fastify';

/**
 * Describes every route of a group (an encapsulated plugin) as needing `security` in the OpenAPI
 * document, unless the route says otherwise. The group's authentication hook is what enforces it.
 */
export function withSecurity(group: FastifyInstance, security: Record<string, string[]>[]): void {
  group.addHook('onRoute', (route) => {
    const schema = (route.schema ??= {}) as { security?: unknown[] };
    schema.security ??= security;
  });
}

/** A dashboard session: the JWT as a bearer token, or the session cookie a browser sends. */
export const SESSION_SECURITY: Record<string, string[]>[] = [{ session: [] }, { sessionCookie: [] }];
