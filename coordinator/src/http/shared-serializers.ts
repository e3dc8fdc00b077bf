import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type BuildSerializer = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']
>;

type Serializer = ReturnType<ReturnType<BuildSerializer>>;

/** The serializers built in this process, per set of shared schemas and options. */
const perSchemaSet = new Map<string, { compile: ReturnType<BuildSerializer>; built: Map<string, Serializer> }>();

/**
 * Fastify's response serializers (fast-json-stringify), one per distinct schema rather than one
 * per route and status: every route's error answers share the one `ErrorBody` schema, so the
 * default built ~770 serializers for ~100 routes, each a generated function kept with its source
 * and an ajv instance of its own: ~15 MiB of the idle coordinator's heap (docs/performance.md,
 * "Coordinator memory"). Schemas are told apart by their JSON, within each set of shared schemas
 * Fastify builds serializers against; and built once per process, not once per app (~150 ms of
 * each coordinator's start, paid again by each coordinator the test suite starts in one process).
 */
export const sharedSerializers: BuildSerializer = (externalSchemas, serializerOptions) => {
  const setKey = JSON.stringify([externalSchemas, serializerOptions]);
  let set = perSchemaSet.get(setKey);
  if (!set) {
    set = { compile: SerializerSelector()(externalSchemas, serializerOptions), built: new Map() };
    perSchemaSet.set(setKey, set);
  }
  const { compile, built } = set;
  return (route) => {
    const key = JSON.stringify(route.schema);
    let serializer = built.get(key);
    if (!serializer) {
      serializer = compile(route);
      built.set(key, serializer);
    }
    return serializer;
  };
};
