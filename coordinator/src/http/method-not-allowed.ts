import Router, { type HTTPMethod } from 'find-my-way';
import type { FastifyInstance } from 'fastify';

/**
 * Which methods a path answers to, for a 405 `Allow` when it is called with another one (RFC 9110
 * §15.5.6). The routes are mirrored, as they are registered, into a router of their own (the one
 * Fastify uses, with the same options), so a path with parameters (`/v1/jobs/<id>`) is matched
 * exactly as Fastify would match it. Only requests that found no route consult it.
 */
export interface AllowedMethods {
  /** The methods that have a route for this path, sorted; empty when no method has one. */
  of(path: string): string[];
}

export function trackAllowedMethods(
  app: FastifyInstance,
  options: { ignoreTrailingSlash: boolean; maxParamLength: number },
): AllowedMethods {
  const router = Router(options);
  const methods = new Set<HTTPMethod>();
  const noop = () => undefined;
  app.addHook('onRoute', (route) => {
    const list = (Array.isArray(route.method) ? route.method : [route.method]) as HTTPMethod[];
    for (const method of list) {
      router.on(method, route.url, noop);
      methods.add(method);
    }
  });
  return {
    of(path) {
      const found: string[] = [];
      for (const method of methods) {
        if (router.find(method, path)) found.push(method);
      }
      return found.sort();
    },
  };
}
