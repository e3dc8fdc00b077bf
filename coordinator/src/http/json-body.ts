import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

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
    if (literal !== null) bodyErrors.set(request, unsafeInteger(numberAt(value, Number(literal), 'body'), literal));
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
 * Where in the parsed body `target` is (the rounded number), found without recursion; a
 * RangeError (the body is nested too deeply) past MAX_DEPTH.
 */
function numberAt(value: unknown, target: number, path: string): string {
  const stack: [unknown, string, number][] = [[value, path, 0]];
  while (stack.length > 0) {
    const [item, at, depth] = stack.pop()!;
    if (item === target) return at;
    if (item === null || typeof item !== 'object') continue;
    if (depth >= MAX_DEPTH) throw new RangeError('nested too deeply');
    const entries = Array.isArray(item) ? item.entries() : Object.entries(item);
    for (const [key, child] of [...entries].reverse()) stack.push([child, `${at}.${key}`, depth + 1]);
  }
  return path;
}

function unsafeInteger(path: string, literal: string): AppError {
  const shown = literal.length > 40 ? `${literal.slice(0, 37)}...` : literal;
  const message = `is the integer ${shown}, beyond ${Number.MAX_SAFE_INTEGER} (2^53 − 1): it cannot be kept exactly; send it as a string`;
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
 * Refuses the request with its body's parse error, if any; runs after the route's own
 * authentication hooks. Callback style: no promise per request.
 */
export function surfaceBodyError(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  done(bodyErrors.get(request));
}
