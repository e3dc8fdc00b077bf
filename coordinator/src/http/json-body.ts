import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { queryStringError } from './query-string.js';

/** Bodies that could not be parsed, held until the route's authentication has passed. */
const bodyErrors = new WeakMap<FastifyRequest, Error>();

/**
 * Request bodies are JSON whatever their Content-Type says. The spec says "Bodies are JSON", and
 * a client that forgets the header is still understood (`curl -d` sends
 * `application/x-www-form-urlencoded`). Nothing is exposed by this: no endpoint takes a cookie,
 * so a cross-site form post carries no credential. The raw bytes are kept for the agent
 * signature, which covers them.
 *
 * A body that is not JSON is not refused here. Parsing runs before a route's `preValidation`
 * hooks, where the agent signature is checked because it needs the bytes. So the error is held
 * on the request, and `surfaceBodyError`, the last `preValidation` hook of every route, throws
 * it. An unauthenticated caller gets its 401 rather than a 422 about a body it had no right to
 * send.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  const parseJson = (
    request: FastifyRequest,
    body: string | Buffer,
    done: (err: Error | null, body?: unknown) => void,
  ) => {
    const raw = body as Buffer;
    request.rawBody = raw;
    if (raw.length === 0) {
      done(null, undefined);
      return;
    }
    // A compressed body is not JSON as sent; say why rather than that it is not JSON.
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      bodyErrors.set(
        request,
        new AppError(
          'unsupported_encoding',
          `The body is sent with Content-Encoding ${JSON.stringify(encoding.slice(0, 40))}; the API takes bodies uncompressed only`,
        ),
      );
      done(null, undefined);
      return;
    }
    // Text that is not Unicode would be stored with U+FFFD in its place, unlike what was sent.
    if (!isUtf8(raw)) {
      bodyErrors.set(request, notUnicode('body', 'is not valid UTF-8'));
      done(null, undefined);
      return;
    }
    const text = raw.toString('utf8');
    void parse(request, text, (error: Error | null, value?: unknown) => {
      if (error) {
        bodyErrors.set(request, isJson(text) ? forbiddenKey() : error);
        done(null, undefined);
        return;
      }
      let body: unknown;
      try {
        body = checkedBody(request, text, value);
      } catch (failure) {
        // A body nested deeper than the walks below can go (it parsed: JSON.parse goes deeper).
        if (!(failure instanceof RangeError)) throw failure;
        bodyErrors.set(request, tooDeep());
        body = undefined;
      }
      done(null, body);
    });
  };
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parseJson);
}

/**
 * The parsed body after the checks JSON.parse does not make, which hold their refusal on the
 * request: a string that is not Unicode text, an integer JSON.parse rounded.
 */
function checkedBody(request: FastifyRequest, text: string, value: unknown): unknown {
  const agent = request.url.startsWith(AGENT_PREFIX);
  if (SURROGATE_ESCAPE.test(text)) {
    // An agent's log line or output may end in half of an emoji (older agents cut long lines
    // between the two halves): its text is kept, with U+FFFD for the half, rather than the
    // whole batch refused. Anyone else is told which field is not Unicode.
    if (agent) return wellFormed(value);
    const path = loneSurrogateAt(value, 'body');
    if (path !== null) bodyErrors.set(request, notUnicode(path, 'is not valid Unicode text (a lone surrogate)'));
  }
  if (!agent && LONG_DIGITS.test(text)) {
    const literal = roundedIntegerLiteral(text);
    if (literal !== null) {
      const keys = numberAt(value, Number(literal));
      const field = fieldAt(request.routeOptions.schema?.body, keys);
      // A field the schema refuses whatever it holds (an unknown one, a boolean) is left to the
      // validation, which says what is wrong with it.
      if (field.takesNumber) bodyErrors.set(request, unsafeInteger(['body', ...keys].join('.'), literal, field));
    }
  }
  return value;
}

function tooDeep(): AppError {
  const message = 'is nested too deeply';
  return new AppError('validation_failed', `body ${message}`, { details: [{ path: 'body', message }] });
}

/** A `\uD800`–`\uDFFF` escape: only such JSON can make a string that is not Unicode text. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** Sixteen digits in a row: only such JSON can hold an integer beyond 2^53 written out. */
const LONG_DIGITS = /\d{16}/;

/**
 * The first integer written out in the JSON `text` (outside its strings) that JSON.parse could not
 * keep: beyond ±(2^53 − 1), it became the nearest double (9007199254740993 became …992), which
 * would be stored and run as if sent. One that a double holds exactly (9007199254740992), and a
 * number written with a fraction or an exponent (approximate by its notation), pass.
 */
function roundedIntegerLiteral(text: string): string | null {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: to its closing quote, its escapes skipped.
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
      continue;
    }
    if (c !== 0x2d && (c < 0x30 || c > 0x39)) continue;
    const token = NUMBER_TOKEN.exec(text.slice(i, i + MAX_NUMBER_TOKEN))![0];
    i += token.length - 1;
    if (!/^-?\d{16,}$/.test(token)) continue;
    const parsed = Number(token);
    if (!Number.isFinite(parsed) || BigInt(token) !== BigInt(parsed)) return token;
  }
  return null;
}
const NUMBER_TOKEN = /^-?\d*(?:\.\d*)?(?:[eE][+-]?\d*)?/;
/** Longer numbers are cut for the test (their digits beyond this are checked as the next token). */
const MAX_NUMBER_TOKEN = 1024;

/** The deepest a body's value is looked for (no API body nests anywhere near it). */
const MAX_DEPTH = 1_000;

/**
 * Where in the parsed body `target` is (the rounded number): the keys and indexes down to it,
 * found without recursion; a RangeError (the body is nested too deeply) past MAX_DEPTH.
 */
function numberAt(value: unknown, target: number): (string | number)[] {
  const stack: [unknown, (string | number)[]][] = [[value, []]];
  while (stack.length > 0) {
    const [item, at] = stack.pop()!;
    if (item === target) return at;
    if (item === null || typeof item !== 'object') continue;
    if (at.length >= MAX_DEPTH) throw new RangeError('nested too deeply');
    const entries: [string | number, unknown][] = Array.isArray(item) ? [...item.entries()] : Object.entries(item);
    for (const [key, child] of entries.reverse()) stack.push([child, [...at, key]]);
  }
  return [];
}

/** What a route's body schema takes at one place of the body, as far as a too large integer goes. */
interface Field {
  /** A number may stand there (or the schema does not say). */
  takesNumber: boolean;
  /**
   * A string may stand there (the integer's digits could be sent as one): `yes` when the schema
   * says so, `maybe` when it does not say what stands there (a trigger's params: the workflow's
   * own params schema says it, later).
   */
  takesString: 'yes' | 'maybe' | 'no';
  /** The bounds of the number there, when every schema that takes one has them. */
  maximum?: number;
  minimum?: number;
}

type Schema = Record<string, unknown> | boolean | undefined;

/**
 * What the body `schema` takes at `keys`. The body schemas are plain JSON Schema (`properties`,
 * `additionalProperties`, `items`, `oneOf`/`anyOf`); a keyword this does not follow (`$ref`)
 * counts as taking anything, as no schema (a route that declares no body) does.
 */
function fieldAt(schema: unknown, keys: (string | number)[]): Field {
  const found = schemasAt(schema as Schema, keys);
  const numeric = found.filter((s) => takes(s, 'integer'));
  const bound = (name: 'maximum' | 'minimum') => {
    const values = numeric.map((s) => (s === true ? undefined : s[name]));
    if (values.length === 0 || !values.every((v) => typeof v === 'number')) return undefined;
    return name === 'maximum' ? Math.max(...(values as number[])) : Math.min(...(values as number[]));
  };
  return {
    takesNumber: numeric.length > 0,
    takesString: found.some(open) ? 'maybe' : found.some((s) => takes(s, 'string')) ? 'yes' : 'no',
    maximum: bound('maximum'),
    minimum: bound('minimum'),
  };
}

/** The schemas (one per alternative of a `oneOf`/`anyOf`) a value at `keys` must match; none: refused. */
function schemasAt(schema: Schema, keys: (string | number)[]): (Record<string, unknown> | true)[] {
  if (schema === false) return [];
  if (schema === undefined || schema === true || typeof schema !== 'object' || '$ref' in schema) return [true];
  const alternatives = [schema.oneOf, schema.anyOf].find(Array.isArray) as Schema[] | undefined;
  if (alternatives) return alternatives.flatMap((alternative) => schemasAt(alternative, keys));
  if (keys.length === 0) return [schema];
  const [key, ...rest] = keys;
  if (typeof key === 'number') {
    if (!takes(schema, 'array')) return [];
    const items = schema.items as Schema | Schema[];
    return schemasAt(Array.isArray(items) ? (items[key] ?? (schema.additionalItems as Schema)) : items, rest);
  }
  if (!takes(schema, 'object')) return [];
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  return schemasAt(Object.hasOwn(properties, key!) ? properties[key!] : (schema.additionalProperties as Schema), rest);
}

/** Whether `schema` takes any value: it is `true`, or says nothing of the value's type. */
function open(schema: Record<string, unknown> | true): boolean {
  return schema === true || (schema.type === undefined && schema.enum === undefined && !('const' in schema));
}

/** Whether a value of JSON type `type` may match `schema`, by its `type`, `enum` and `const`. */
function takes(schema: Record<string, unknown> | true, type: 'string' | 'integer' | 'array' | 'object'): boolean {
  if (schema === true) return true;
  const kind = (value: unknown) =>
    type === 'integer' ? typeof value === 'number' : type === 'string' ? typeof value === 'string' : false;
  if (Array.isArray(schema.enum)) return schema.enum.some(kind);
  if ('const' in schema) return kind(schema.const);
  const declared = schema.type;
  if (declared === undefined) return true;
  const types = Array.isArray(declared) ? declared : [declared];
  return types.includes(type) || (type === 'integer' && types.includes('number'));
}

/**
 * The refusal of an integer JSON.parse rounded: send it as a string where the field takes one;
 * elsewhere it is too large (or too small), against the field's bound when it has one.
 */
function unsafeInteger(path: string, literal: string, field: Field): AppError {
  const shown = literal.length > 40 ? `${literal.slice(0, 37)}...` : literal;
  const negative = literal.startsWith('-');
  const bound = negative ? field.minimum : field.maximum;
  const beyond = `beyond ${Number.MAX_SAFE_INTEGER} (2^53 − 1)`;
  const message =
    field.takesString !== 'no'
      ? `is the integer ${shown}, ${beyond}: it cannot be kept exactly; send it as a string${field.takesString === 'maybe' ? ' where one is taken' : ''}`
      : bound !== undefined && Number.isSafeInteger(bound)
        ? `is the integer ${shown}: must be at ${negative ? 'least' : 'most'} ${bound}`
        : `is the integer ${shown}, ${beyond}: it is too ${negative ? 'small' : 'large'} to be kept exactly`;
  return new AppError('validation_failed', `${path} ${message}`, { details: [{ path, message }] });
}

/** The signed agent protocol (docs/agent-protocol.md). */
const AGENT_PREFIX = '/v1/agent/';

/** The value with every string (and key) made well-formed: a lone surrogate becomes U+FFFD. */
function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return value.toWellFormed();
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(wellFormed);
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key.toWellFormed(), wellFormed(item)]));
}

/** Where in the parsed body a string (or a key) holds a lone surrogate, or null. */
function loneSurrogateAt(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.isWellFormed() ? null : path;
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = loneSurrogateAt(value[i], `${path}.${i}`);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    if (!key.isWellFormed()) return path;
    const found = loneSurrogateAt(item, `${path}.${key}`);
    if (found !== null) return found;
  }
  return null;
}

function notUnicode(path: string, message: string): AppError {
  return new AppError('validation_failed', `${path} ${message}`, { details: [{ path, message }] });
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** JSON that Fastify's parser still refused: it has a prototype-polluting key. */
function forbiddenKey(): AppError {
  return new AppError(
    'validation_failed',
    'The body has a "__proto__" or "constructor.prototype" key, which is refused',
    {
      details: [{ path: 'body', message: 'has a "__proto__" or "constructor.prototype" key' }],
    },
  );
}

/**
 * Refuses the request with its query string's or its body's parse error, if any; runs after the
 * route's own authentication hooks. Callback style: no promise per request.
 */
export function surfaceBodyError(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  done(queryStringError(request.query) ?? bodyErrors.get(request));
}
