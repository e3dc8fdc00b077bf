import { attackString, bulkString, deepJson, oddNumber, randomJson, RawJson } from './fuzz-attacks.js';
import type { Random } from './fuzz-random.js';
import type { JsonSchema } from './fuzz-routes.js';

/**
 * JSON values for fuzz tests: valid instances of a route's request schema (so that requests get
 * past validation into the handlers), mutations of them (so that validation itself is attacked),
 * and a serializer that can write what `JSON.stringify` cannot (huge literals, deep nesting,
 * `__proto__` keys).
 */

/**
 * Values that a field of this name takes when generated valid: real ids for `agentId`, the
 * workflows the agent reported for `workflowName`, and so on. For an array field, its items.
 */
export type FieldHints = Record<string, readonly unknown[]>;

const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

/** Strings tried in turn against a `pattern` when no hint matches it. */
const PATTERN_CANDIDATES = [
  'stable',
  'beta',
  'deploy',
  'a',
  'abc',
  'app-1',
  'v1',
  '1.0.0',
  'x_y.z',
  'A1',
  'release 2',
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
];

const PAST = Date.UTC(2001, 0, 1);
const FUTURE = Date.UTC(2099, 0, 1);

function typesOf(schema: JsonSchema): string[] {
  if (schema.type === undefined) return [];
  return Array.isArray(schema.type) ? schema.type : [schema.type];
}

function stringFor(schema: JsonSchema, rnd: Random): string {
  // Fixed instants (not the clock), so that a seed always makes the same values.
  if (schema.format === 'date-time')
    return new Date(rnd.pick([PAST, FUTURE]) + rnd.int(0, 30) * 86_400_000).toISOString();
  if (schema.pattern === UUID_PATTERN) return rnd.uuid();
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 40, min + 30);
  if (schema.pattern) {
    const re = new RegExp(schema.pattern, 'u');
    const fits = rnd
      .shuffle(PATTERN_CANDIDATES)
      .find((s) => re.test(s) && s.length >= min && s.length <= (schema.maxLength ?? Infinity));
    if (fits) return fits;
  }
  return rnd.string(rnd.int(Math.max(min, 1), Math.max(max, min, 1)));
}

function numberFor(schema: JsonSchema, rnd: Random, integer: boolean): number {
  const min = schema.minimum ?? -1000;
  const max = schema.maximum ?? 1000;
  const value = rnd.weighted<() => number>([
    [1, () => min],
    [1, () => Math.min(max, min + 1)],
    [3, () => min + rnd.int(0, Math.min(max - min, 100))],
    [1, () => max],
  ])();
  return integer || rnd.chance(0.5) ? Math.round(value) : value + (value < max ? 0.5 : 0);
}

export interface ValidValueOptions {
  /**
   * Makes what goes where the schema allows anything (an untyped value, an object without
   * declared properties): free-form payloads such as trigger params and job output.
   */
  freeForm?: () => unknown;
}

/** A value valid against `schema` (as far as its keywords say), preferring hinted values. */
export function validValue(
  schema: JsonSchema,
  rnd: Random,
  hints: FieldHints,
  name?: string,
  options: ValidValueOptions = {},
): unknown {
  const types = typesOf(schema);
  const hinted = name === undefined ? undefined : hints[name];
  // A copy: mutations change values in place, and hints share arrays with the fixture.
  const hint = () => structuredClone(rnd.pick(hinted!));
  if (hinted && hinted.length > 0 && !types.includes('array') && rnd.chance(0.9)) return hint();
  if (schema.enum) return rnd.pick(schema.enum);
  if (types.length === 0) return options.freeForm ? options.freeForm() : randomJson(rnd);
  const nonNull = types.filter((t) => t !== 'null');
  // Nullable fields are often optional companions of another (null: unused), so null is common.
  const type = nonNull.length === 0 || (types.includes('null') && rnd.chance(0.35)) ? 'null' : rnd.pick(nonNull);
  switch (type) {
    case 'null':
      return null;
    case 'boolean':
      return rnd.chance(0.5);
    case 'integer':
      return numberFor(schema, rnd, true);
    case 'number':
      return numberFor(schema, rnd, false);
    case 'string':
      return stringFor(schema, rnd);
    case 'array': {
      const min = schema.minItems ?? 0;
      const count = rnd.int(min, Math.max(min, Math.min(schema.maxItems ?? 3, min + 3)));
      const items = Array.from({ length: count }, () =>
        hinted && hinted.length > 0 && rnd.chance(0.9)
          ? hint()
          : validValue(schema.items ?? {}, rnd, hints, name, options),
      );
      return schema.uniqueItems ? [...new Map(items.map((i) => [JSON.stringify(i), i])).values()] : items;
    }
    default:
      return validObject(schema, rnd, hints, options);
  }
}

function validObject(
  schema: JsonSchema,
  rnd: Random,
  hints: FieldHints,
  options: ValidValueOptions,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (schema.maxProperties === 0) return out;
  const required = new Set(schema.required ?? []);
  for (const [key, sub] of Object.entries(schema.properties ?? {})) {
    if (required.has(key) || rnd.chance(0.35)) out[key] = validValue(sub, rnd, hints, key, options);
  }
  const extra = schema.additionalProperties;
  if (typeof extra === 'object') {
    for (let i = rnd.int(0, 2); i > 0; i--)
      out[rnd.string(rnd.int(1, 10))] = validValue(extra, rnd, hints, undefined, options);
  } else if (extra !== false && schema.properties === undefined) {
    if (options.freeForm) out[rnd.string(rnd.int(1, 8))] = options.freeForm();
    else Object.assign(out, randomJson(rnd, 1));
  }
  return out;
}

type Container = Record<string, unknown> | unknown[];

/** Every container in `value` (the root included), so a mutation can land anywhere. */
function containers(value: unknown, out: Container[] = []): Container[] {
  if (value !== null && typeof value === 'object' && !(value instanceof RawJson)) {
    out.push(value as Container);
    for (const child of Object.values(value)) containers(child, out);
  }
  return out;
}

function setOwn(target: Container, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** What a free-form payload should survive: deep nesting, numbers JS cannot hold, bulk. */
export function hostilePayload(rnd: Random): unknown {
  return rnd.weighted<() => unknown>([
    [3, () => deepJson(rnd)],
    [2, () => oddNumber(rnd)],
    [1, () => bulkString(rnd.pick([70_000, 900_000]))],
    [1, () => Array.from({ length: rnd.pick([1_001, 20_000]) }, (_, i) => i)],
    [1, () => randomJson(rnd)],
  ])();
}

/** A value of a type the schema will most likely not expect, or at an edge. */
function hostileValue(rnd: Random): unknown {
  return rnd.weighted<() => unknown>([
    [2, () => null],
    [1, () => rnd.pick([true, false, 0, -1, 1.5, '', '5', 'true', [], {}, [null], { '': null }])],
    [2, () => oddNumber(rnd)],
    [2, () => attackString(rnd)],
    [1, () => bulkString(rnd.pick([256, 4_097, 70_000, 1_100_000]))],
    [1, () => deepJson(rnd)],
    [1, () => Array.from({ length: rnd.pick([1_001, 20_000]) }, (_, i) => i)],
    [1, () => randomJson(rnd)],
  ])();
}

/** Applies one to three mutations to `value` (in place where it can) and returns the result. */
export function mutate(value: unknown, rnd: Random): unknown {
  let root = value;
  for (let n = rnd.int(1, 3); n > 0; n--) {
    const targets = containers(root);
    if (targets.length === 0 || rnd.chance(0.08)) {
      root = hostileValue(rnd);
      continue;
    }
    const target = rnd.pick(targets);
    const keys = Object.keys(target);
    const key = keys.length > 0 && rnd.chance(0.75) ? rnd.pick(keys) : rnd.string(rnd.int(1, 8));
    rnd.weighted<() => void>([
      [5, () => setOwn(target, key, hostileValue(rnd))],
      [2, () => (Array.isArray(target) ? removeAt(target, Number(key) || 0) : delete target[key])],
      [1, () => setOwn(target, rnd.pick(['__proto__', 'constructor']), { prototype: { polluted: true } })],
      [1, () => setOwn(target, attackString(rnd), randomJson(rnd))],
    ])();
  }
  return root;
}

/**
 * Removes one element in place. Not with `splice`: it builds its answer with the array's
 * `constructor`, which an earlier mutation may have replaced with a hostile own property.
 */
function removeAt(array: unknown[], index: number): void {
  if (index < 0 || index >= array.length) return;
  array.copyWithin(index, index + 1);
  array.length -= 1;
}

/** JSON text of `value`, with `RawJson` pieces written as is and own `__proto__` keys kept. */
export function toJsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) {
    // A loop, not map: a mutation may have given the array an own `constructor`.
    const items: string[] = [];
    for (let i = 0; i < value.length; i++) items.push(toJsonText(value[i]));
    return `[${items.join(',')}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value).map(
      (k) => `${JSON.stringify(k)}:${toJsonText((value as Record<string, unknown>)[k])}`,
    );
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
