import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext resolution.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const common: Options = { allErrors: true, removeAdditional: false, useDefaults: false, strict: false };

/**
 * Bodies are validated strictly: no type coercion, no silently dropped unknown fields (they are
 * a 422). Query strings and path params are strings on the wire, so those are coerced.
 */
export function registerValidation(app: FastifyInstance): void {
  const strict = addFormats(new Ajv({ ...common, coerceTypes: false }));
  const coercing = addFormats(new Ajv({ ...common, coerceTypes: 'array', useDefaults: true }));
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body' ? strict.compile(schema) : coercing.compile(schema),
  );
}
