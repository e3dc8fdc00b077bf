import type { FastifySchema, RouteOptions } from 'fastify';
import { describeOtherAnswers } from './named.js';

/**
 * What the OpenAPI document says of a route beyond what the route validates and serializes
 * (@fastify/swagger's `transform`; nothing here runs on a request):
 *
 * - answers of another shape (`config.otherAnswers`, named.ts);
 * - `config.documented`: request headers and a body the route reads itself (the presigned
 *   upload's bytes, a run's `Idempotency-Key`), which a schema would make Fastify validate;
 * - every POST, PUT, PATCH and DELETE has its body read, whatever its schema: it may answer 400
 *   (a `Content-Type` or `Content-Length` that does not parse) and 413 (over the body limit);
 *   one that reads it as JSON (every route but those that read the bytes themselves,
 *   `documented.body` or `documented.rawBody`) 415 (a `Content-Encoding`) and 422 (not JSON);
 *   one that validates a body or a query 422;
 * - a path parameter may answer 400 (a malformed percent-encoding: http/error-handler.ts);
 * - every route may answer 503 `unavailable`: the coordinator is shutting down (app.ts), or its
 *   database cannot be reached or take writes (http/error-handler.ts);
 * - every 429 carries `Retry-After`, and a 503 mostly does.
 */
export interface DocumentedRequest {
  headers?: Record<string, object>;
  body?: object;
  consumes?: string[];
  /** The route's body is kept as bytes for the route (a chat provider's signed body): no 415 nor 422 for it. */
  rawBody?: true;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Request parts the route reads itself, for the API description only (describeForDocument). */
    documented?: DocumentedRequest;
  }
}

const ERROR_BODY = { $ref: 'ErrorBody#' } as const;
/** Answered by the body's reading, before the route (http/json-body.ts, http/error-handler.ts). */
const BODY_ANSWERS = [400, 413] as const;
const JSON_BODY_ANSWERS = [415, 422] as const;
/** The methods whose body Fastify reads (GET's and HEAD's is left unread). */
const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const RETRY_AFTER = {
  'retry-after': { type: 'integer', minimum: 1, description: 'seconds to wait before trying again' },
} as const;

export function describeForDocument<S extends FastifySchema>(input: {
  schema: S;
  url: string;
  route: RouteOptions;
}): { schema: FastifySchema; url: string } {
  const { schema, url } = describeOtherAnswers(input);
  if (!schema) return { schema, url };
  const documented = input.route.config?.documented;
  const view: Record<string, unknown> = { ...schema };
  if (documented?.headers) {
    view.headers = { type: 'object', properties: documented.headers };
  }
  if (documented?.body) {
    view.body = documented.body;
    if (documented.consumes) view.consumes = documented.consumes;
  }
  const response = { ...((schema as { response?: Record<string, unknown> }).response ?? {}) };
  const methods = [input.route.method].flat();
  if (methods.some((m) => WITH_BODY.has(m))) {
    for (const status of BODY_ANSWERS) response[status] ??= ERROR_BODY;
    if (!documented?.body && !documented?.rawBody) {
      for (const status of JSON_BODY_ANSWERS) response[status] ??= ERROR_BODY;
    }
  }
  if (input.url.includes(':')) response[400] ??= ERROR_BODY;
  if (schema.body || schema.querystring) response[422] ??= ERROR_BODY;
  response[503] ??= ERROR_BODY;
  for (const status of [429, 503]) {
    if (response[status]) response[status] = { ...(response[status] as object), headers: RETRY_AFTER };
  }
  if (Object.keys(response).length > 0) view.response = response;
  return { schema: view as FastifySchema, url };
}

interface DocumentOperation {
  requestBody?: { required?: boolean; content?: Record<string, { schema?: { type?: unknown } }> };
}

/**
 * The whole document, once built (@fastify/swagger's `transformObject`): a body the route takes
 * or leaves out (its schema accepts `null`: a publish, a yank, a rollout's move, a cancel, taken
 * with no body, `{}` or its options) is an optional `requestBody`. @fastify/swagger marks every
 * body `required`, which would make a client generated from the document send one.
 */
export function markOptionalBodies<T extends object>(document: T): T {
  const paths = (document as { paths?: Record<string, Record<string, DocumentOperation>> }).paths ?? {};
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      const body = operation.requestBody;
      if (!body?.content) continue;
      const acceptsNull = Object.values(body.content).some(({ schema }) => [schema?.type].flat().includes('null'));
      if (acceptsNull) body.required = false;
    }
  }
  return document;
}
