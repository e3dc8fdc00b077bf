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
      if (error) bodyErrors.set(request, isJson(text) ? forbiddenKey() : error);
      else if (SURROGATE_ESCAPE.test(text)) {
        // An agent's log line or output may end in half of an emoji (older agents cut long lines
        // between the two halves): its text is kept, with U+FFFD for the half, rather than the
        // whole batch refused. Anyone else is told which field is not Unicode.
        if (request.url.startsWith(AGENT_PREFIX)) {
          done(null, wellFormed(value));
          return;
        }
        const path = loneSurrogateAt(value, 'body');
        if (path !== null) bodyErrors.set(request, notUnicode(path, 'is not valid Unicode text (a lone surrogate)'));
      }
      if (!error && LONG_DIGITS.test(text) && !request.url.startsWith(AGENT_PREFIX)) {
        const path = unsafeIntegerAt(value, 'body');
        if (path !== null) bodyErrors.set(request, unsafeInteger(path));
      }
      done(null, error ? undefined : value);
    });
  };
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parseJson);
}

/** A `\uD800`–`\uDFFF` escape: only such JSON can make a string that is not Unicode text. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** Sixteen digits in a row: only such JSON can hold an integer beyond 2^53 written out. */
const LONG_DIGITS = /\d{16}/;

/**
 * Where in the parsed body a number is an integer beyond ±(2^53 − 1), or null: JSON.parse gave the
 * nearest double (9007199254740993 became …992), which would be stored and run as if sent.
 */
function unsafeIntegerAt(value: unknown, path: string): string | null {
  if (typeof value === 'number') return Number.isInteger(value) && !Number.isSafeInteger(value) ? path : null;
  if (value === null || typeof value !== 'object') return null;
  for (const [key, item] of Array.isArray(value) ? value.entries() : Object.entries(value)) {
    const found = unsafeIntegerAt(item, `${path}.${key}`);
    if (found !== null) return found;
  }
  return null;
}

function unsafeInteger(path: string): AppError {
  const message = `is an integer beyond ${Number.MAX_SAFE_INTEGER} (2^53 − 1), which cannot be kept exactly; send it as a string`;
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
