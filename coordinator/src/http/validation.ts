import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext resolution.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const common: Options = { allErrors: true, removeAdditional: false, useDefaults: false, strict: false };

type Validate = ValidateFunction;

/**
 * Bodies are validated strictly: no type coercion, no silently dropped unknown fields (they are
 * a 422). Query strings and path params are strings on the wire, so those are coerced.
 *
 * Each distinct schema is compiled once per process, not once per app: compiling every route's
 * schemas took ~200 ms of each coordinator's start, paid again by each of the hundreds of
 * coordinators the test suite starts in one process (and by several in one bench process).
 */
export function registerValidation(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => validatorOf(schema, httpPart));
}

let compilers: { strict: Ajv; coercing: Ajv } | undefined;
const validators = new Map<string, Validate>();

function validatorOf(schema: unknown, httpPart: string | undefined): Validate {
  const kind = httpPart === 'body' ? 'body' : httpPart === 'querystring' ? 'querystring' : 'other';
  const key = `${kind} ${JSON.stringify(schema)}`;
  let validate = validators.get(key);
  if (!validate) {
    compilers ??= {
      strict: addFormats(new Ajv({ ...common, coerceTypes: false })),
      coercing: addFormats(new Ajv({ ...common, coerceTypes: 'array', useDefaults: true })),
    };
    if (kind === 'body') validate = compilers.strict.compile(schema as object);
    else {
      const coerced = compilers.coercing.compile(schema as object);
      validate = kind === 'querystring' ? decimalIntegersFirst(schema, coerced) : coerced;
    }
    validators.set(key, validate);
  }
  return validate;
}

/** A whole number as a query string writes it: decimal digits, an optional minus, no padding. */
const DECIMAL_INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

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
