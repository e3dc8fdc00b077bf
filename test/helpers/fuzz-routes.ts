import type { Coordinator } from '@drover/coordinator';

/**
 * The routes a fuzz test exercises, read from the coordinator itself: the methods and paths
 * Fastify registered, with the request schemas and credentials the served OpenAPI document gives
 * them. A route added to the coordinator is fuzzed without editing the test.
 */

/** The subset of JSON Schema the request schemas use. */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  default?: unknown;
}

export type RouteAuth = 'session' | 'apiToken' | 'agentSignature' | 'none';

export interface FuzzRoute {
  method: string;
  /** Fastify's form: `/v1/orgs/:orgId/apps/:appId`. */
  path: string;
  /** The path parameters, in order. */
  params: string[];
  /** Declared query parameters and their schemas. */
  query: Record<string, JsonSchema>;
  /** The JSON body schema; null when the route declares none. */
  body: JsonSchema | null;
  auth: RouteAuth;
  /** Also answers HEAD (Fastify's automatic HEAD route of a GET). */
  head: boolean;
}

interface OpenApiOperation {
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; schema?: JsonSchema }[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
}

/** Every (method, path) registered on the app, read from Fastify's route tree. */
export function registeredRoutes(app: Coordinator['app']): { method: string; path: string }[] {
  const routes: { method: string; path: string }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = line.match(/^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/);
    if (!match) continue;
    stack.length = match[1]!.length / 4;
    stack.push(match[2]!);
    for (const method of match[3]?.split(', ') ?? []) routes.push({ method, path: stack.join('') });
  }
  return routes;
}

const toOpenApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

function authOf(operation: OpenApiOperation | undefined): RouteAuth {
  const schemes = (operation?.security ?? []).flatMap((s) => Object.keys(s));
  if (schemes.includes('agentSignature')) return 'agentSignature';
  if (schemes.includes('apiToken')) return 'apiToken';
  if (schemes.includes('session')) return 'session';
  return 'none';
}

/**
 * The routes to fuzz: every method and path Fastify serves (HEAD folded into its GET), each with
 * what the OpenAPI document says of it (nothing for a route it hides, such as the document itself).
 */
export function fuzzRoutes(app: Coordinator['app'], openapi: OpenApiDocument): FuzzRoute[] {
  const registered = registeredRoutes(app);
  const heads = new Set(registered.filter((r) => r.method === 'HEAD').map((r) => r.path));
  return registered
    .filter((r) => r.method !== 'HEAD')
    .map(({ method, path }) => {
      const operation = openapi.paths[toOpenApiPath(path)]?.[method.toLowerCase()];
      const query: Record<string, JsonSchema> = {};
      for (const p of operation?.parameters ?? []) if (p.in === 'query') query[p.name] = p.schema ?? {};
      return {
        method,
        path,
        params: [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!),
        query,
        body: operation?.requestBody?.content?.['application/json']?.schema ?? null,
        auth: authOf(operation),
        head: heads.has(path),
      };
    });
}
