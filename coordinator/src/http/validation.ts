import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
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
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart === 'body') return strict.compile(schema);
    const validate = coercing.compile(schema);
    return httpPart === 'querystring' ? decimalIntegersFirst(schema, validate) : validate;
  });
}

/** A whole number as a query string writes it: decimal digits, an optional minus, no padding. */
const DECIMAL_INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

type Validate = ValidateFunction;

/**
 * Ajv's coercion reads a query's integer the way JavaScript's `Number()` does: `0x10` is 16, `1e1`
 * 10, ` 5 ` 5, a blank 0, `Infinity` a number. A query's integers are refused (422) unless written
 * in plain decimal digits and exact (at most 2^53 - 1), before the schema's own checks.
 */
function decimalIntegersFirst(schema: unknown, validate: Validate): Validate {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const integers = Object.entries(properties)
    .filter(([, p]) => (Array.isArray(p.type) ? p.type.includes('integer') : p.type === 'integer'))
    .map(([name]) => name);
  if (integers.length === 0) return validate;
  const checked = ((data: unknown) => {
    const query = (data ?? {}) as Record<string, unknown>;
    for (const name of integers) {
      const value = query[name];
      for (const text of Array.isArray(value) ? value : [value]) {
        if (typeof text !== 'string') continue;
        if (!DECIMAL_INTEGER.test(text) || !Number.isSafeInteger(Number(text))) {
          checked.errors = [
            {
              keyword: 'decimalInteger',
              instancePath: `/${name}`,
              schemaPath: `#/properties/${name}/type`,
              params: {},
              message: `must be a whole number in decimal digits, got ${JSON.stringify(text.slice(0, 40))}`,
            } satisfies ErrorObject,
          ];
          return false;
        }
      }
    }
    const ok = validate(data);
    checked.errors = validate.errors ?? null;
    return ok;
  }) as unknown as Validate;
  return checked;
}
