import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { UUID_PATTERN } from '../util/ids.js';

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
  const kind = httpPart === 'body' || httpPart === 'querystring' || httpPart === 'params' ? httpPart : 'other';
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
    // The path's ids are lower-cased before any hook (refusal-order.ts): not a second time here.
    if (httpPart !== 'params') validate = idsLowerCased(schema, validate);
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

const UUID = new RegExp(UUID_PATTERN);

/** Lower-cases the UUIDs of a value where its schema declares one (objects and arrays in place); answers the value. */
type LowerCase = (data: unknown) => unknown;

/**
 * Ids are UUIDs, stored lower-case, and a schema takes either case (schemas/common.ts, `uuid`): once
 * the data is valid, every UUID it holds where the schema declares one (a body's `bindingId`, a
 * grant's `agentIds`, a query's `triggerId`) is lower-cased, as the ids of the path are
 * (refusal-order.ts), so that an upper-case spelling names the same resource everywhere. Free-form
 * values (a run's `params`) are left as sent: their schema declares no UUID.
 */
function idsLowerCased(schema: unknown, validate: Validate): Validate {
  const lowerCase = lowerCaseOf(schema);
  if (lowerCase === null) return validate;
  const checked = ((data: unknown) => {
    const ok = validate(data);
    checked.errors = validate.errors ?? null;
    if (ok) lowerCase(data);
    return ok;
  }) as unknown as Validate;
  return checked;
}

function lowerCaseOf(schema: unknown): LowerCase | null {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return null;
  const node = schema as Record<string, unknown>;
  const steps: LowerCase[] = [];
  if (node.pattern === UUID_PATTERN) {
    steps.push((value) => (typeof value === 'string' && UUID.test(value) ? value.toLowerCase() : value));
  }
  const properties = (node.properties ?? {}) as Record<string, unknown>;
  const byName = Object.entries(properties).flatMap(([name, property]) => {
    const lowerCase = lowerCaseOf(property);
    return lowerCase === null ? [] : [[name, lowerCase] as const];
  });
  if (byName.length > 0) {
    steps.push((value) => {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
      const object = value as Record<string, unknown>;
      for (const [name, lowerCase] of byName) {
        if (Object.hasOwn(object, name)) object[name] = lowerCase(object[name]);
      }
      return value;
    });
  }
  const items = lowerCaseOf(node.items);
  if (items !== null) {
    steps.push((value) => {
      if (Array.isArray(value)) for (let i = 0; i < value.length; i++) value[i] = items(value[i]);
      return value;
    });
  }
  // Each alternative the data may match: a UUID is lower-cased only where it is one, so an
  // alternative that did not match changes nothing that is not an id.
  for (const keyword of ['oneOf', 'anyOf', 'allOf'] as const) {
    const alternatives = node[keyword];
    if (!Array.isArray(alternatives)) continue;
    for (const alternative of alternatives) {
      const lowerCase = lowerCaseOf(alternative);
      if (lowerCase !== null) steps.push(lowerCase);
    }
  }
  if (steps.length === 0) return null;
  return (value) => steps.reduce((current, step) => step(current), value);
}
