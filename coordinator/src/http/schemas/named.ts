import { isDeepStrictEqual } from 'node:util';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';

/**
 * Named schemas: the shapes the API answers with (a job, a trigger, an agent, ...) each have a
 * name, and the OpenAPI document describes each once, under `#/components/schemas/<name>`, and
 * refers to it from every operation that answers with it. Clients generated from the document
 * (the dashboard's and the CLI's types: `@drover/shared/api`; users' own) get one `Job` type
 * instead of a copy per operation.
 *
 * The name is the schema's `$id`. Nested in an answer (an item of a list, a field), @fastify/swagger
 * moves an `$id` schema into the components by itself (app.ts names it by its `$id`); a whole answer
 * it would copy inline, so `nameAnswers` makes such an answer an `allOf` of the named schema,
 * which fast-json-stringify serializes as the schema itself.
 */

const declared = new Map<string, object>();

type Named<S extends object> = S & { readonly $id: string };

/** Declares `schema` under `name` in the OpenAPI document's components. */
export function named<const S extends object>(name: string, schema: S): Named<S> {
  if (declared.has(name)) throw new Error(`Two schemas are named ${name}`);
  const result = { ...schema, $id: name };
  declared.set(name, result);
  return result;
}

/** What an answer may say beside its named schema: its own description, examples and headers. */
const ANSWER_ANNOTATIONS = ['description', 'examples', 'headers'] as const;

const annotationsOf = (schema: Record<string, unknown>) =>
  Object.fromEntries(ANSWER_ANNOTATIONS.filter((k) => schema[k] !== undefined).map((k) => [k, schema[k]]));

const withoutAnnotations = (schema: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(schema).filter(([k]) => !(ANSWER_ANNOTATIONS as readonly string[]).includes(k)));

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The declared schema a copy (`{...JobSchema, description}`, `withExample(...)`) was made from. */
function declaration(name: string, copy: Record<string, unknown>, where: string): Record<string, unknown> {
  const original = declared.get(name) as Record<string, unknown> | undefined;
  if (!original) throw new Error(`${where}: the schema ${name} was not declared with named()`);
  if (copy !== original && !isDeepStrictEqual(withoutAnnotations(copy), withoutAnnotations(original))) {
    throw new Error(`${where}: a schema named ${name} differs from its declaration beyond description and examples`);
  }
  return original;
}

/** Every nested schema with an `$id` must be the declared one: one name, one shape. */
function checkNested(schema: unknown, where: string): void {
  if (Array.isArray(schema)) {
    for (const item of schema) checkNested(item, where);
    return;
  }
  if (!isObject(schema)) return;
  if (typeof schema.$id === 'string' && schema !== declared.get(schema.$id)) {
    throw new Error(`${where}: the schema ${schema.$id} nested in an answer is a copy; use the declared one`);
  }
  for (const [key, value] of Object.entries(schema))
    if (key !== 'examples' && key !== 'example') checkNested(value, where);
}

/** A whole answer that is a named schema, as a reference to it with the answer's own annotations. */
function asAnswer(schema: Record<string, unknown>, where: string): Record<string, unknown> {
  const original = declaration(schema.$id as string, schema, where);
  return { allOf: [original], ...annotationsOf(original), ...annotationsOf(schema) };
}

/** Rewrites each route's answers that are named schemas as references (see above); run before the routes are added. */
export function nameAnswers(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const response = (route.schema as { response?: Record<string, unknown> } | undefined)?.response;
    if (!response) return;
    const answers: Record<string, unknown> = {};
    for (const [status, schema] of Object.entries(response)) {
      const where = `${String(route.method)} ${route.url} ${status}`;
      const answer = isObject(schema) && typeof schema.$id === 'string' ? asAnswer(schema, where) : schema;
      checkNested(answer, where);
      answers[status] = answer;
    }
    (route.schema as { response: Record<string, unknown> }).response = answers;
  });
}

/**
 * The API description's view of a route whose answers have another shape beside the one its
 * serializer writes (`config.otherAnswers`, status to schema: a run's batch, http/run-answer.ts):
 * each such answer is described as either. The other shape is written without the route's
 * serializer, so the hot path keeps its own.
 */
export function describeOtherAnswers<S extends FastifySchema>(input: {
  schema: S;
  url: string;
  route: RouteOptions;
}): {
  schema: FastifySchema;
  url: string;
} {
  const { schema, url, route } = input;
  const other = route.config?.otherAnswers;
  const response = (schema as { response?: Record<string, unknown> } | undefined)?.response;
  if (!other || !response) return { schema, url };
  const answers = { ...response };
  const examplesOf = (schema: unknown): unknown[] =>
    isObject(schema) && Array.isArray(schema.examples) ? schema.examples : [];
  for (const [status, alternative] of Object.entries(other)) {
    const own = answers[status];
    answers[status] = own
      ? { anyOf: [own, alternative], examples: [...examplesOf(own), ...examplesOf(alternative)] }
      : alternative;
  }
  return { schema: { ...schema, response: answers }, url };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answers of another shape, described beside the route's own (describeOtherAnswers). */
    otherAnswers?: Readonly<Record<string, object>>;
  }
}
