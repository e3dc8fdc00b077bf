import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, type ValidationDetail } from '../errors.js';
import { databaseUnwritable, isDatabaseUnreachable } from '../database-errors.js';
import { StorageUnavailableError } from '../storage/backend.js';
import type { AllowedMethods } from './method-not-allowed.js';
import {
  AGENT_REPORTS_QUERY_PATTERN,
  AGENT_VERSION_HEADER_PATTERN,
  NO_CONTROL_CHARACTERS_PATTERN,
  PARAM_NAME_PATTERN,
  RELEASE_KEY_PATTERN,
  SHA256_HEX_PATTERN,
  WORKFLOW_NAME_PATTERN,
} from '@drover/shared';
import { CHANNEL_PATTERN, SLUG_PATTERN, VERSION_PATTERN } from '../domain/ota/inputs.js';
import { CHAT_USER_ID_PATTERN } from '../domain/triggers/triggers.js';
import { UUID_PATTERN } from '../util/ids.js';
import { NO_WHITESPACE_PATTERN } from './schemas/common.js';

interface AjvIssue {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/**
 * What each pattern of the schemas means, for its refusal in words instead of ajv's "must match
 * pattern" and the expression. Every pattern a request is checked against has one (a test walks
 * the OpenAPI document for them).
 */
export const PATTERN_MEANINGS: Readonly<Record<string, string>> = {
  // Every id of the schemas (common.ts's `uuid`): in a query string (`?triggerId=abc`), a body.
  [UUID_PATTERN]: 'must be a UUID',
  [VERSION_PATTERN]:
    'must not contain control characters or bidirectional formatting characters (U+202A to U+202E, U+2066 to U+2069)',
  [NO_CONTROL_CHARACTERS_PATTERN]: 'must not contain control characters',
  [NO_WHITESPACE_PATTERN]: 'must not contain spaces or other whitespace',
  [SLUG_PATTERN]: "must be 1 to 63 lowercase letters, digits or '-', starting with a letter or digit",
  [CHANNEL_PATTERN]: "must be 1 to 63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit",
  [WORKFLOW_NAME_PATTERN]: "must start with a letter or digit, followed by letters, digits, '_', '.' or '-'",
  [PARAM_NAME_PATTERN]: "must start with a letter or '_', followed by letters, digits, '_', '.' or '-'",
  [CHAT_USER_ID_PATTERN]:
    "must be a chat user's id: 1 to 64 letters and digits (Slack's U0123ABCD, a Discord snowflake)",
  [RELEASE_KEY_PATTERN]:
    "must be an Ed25519 public key as standard base64 of its raw 32 bytes: 44 characters ending with '=' (drover release keygen prints it)",
  [SHA256_HEX_PATTERN]: 'must be a SHA-256 in lowercase hexadecimal: 64 characters 0-9 and a-f',
  [AGENT_VERSION_HEADER_PATTERN]: 'must be 1 to 64 visible ASCII characters',
  [AGENT_REPORTS_QUERY_PATTERN]: "must be two lowercase hex SHA-256 joined by '.'",
};

const characters = (n: unknown) => `${String(n)} character${n === 1 ? '' : 's'}`;

/** Turns ajv's output into `{path, message}` details that say what was expected. */
export function validationDetails(issues: readonly AjvIssue[], context: string): ValidationDetail[] {
  // An empty string breaks its pattern too: "must not be empty" says it all.
  const empty = new Set(
    issues.filter((i) => i.keyword === 'minLength' && i.params.limit === 1).map((i) => i.instancePath),
  );
  return issues
    .filter((i) => !(i.keyword === 'pattern' && empty.has(i.instancePath)))
    .map((issue) => {
      const base = `${context}${issue.instancePath.replace(/\//g, '.').replace(/^\./, context ? '.' : '')}`;
      switch (issue.keyword) {
        case 'minLength':
          return {
            path: base,
            message:
              issue.params.limit === 1
                ? 'must not be empty'
                : `must be at least ${characters(issue.params.limit)} long`,
          };
        case 'maxLength':
          return { path: base, message: `must be at most ${characters(issue.params.limit)} long` };
        case 'pattern': {
          const meaning = PATTERN_MEANINGS[String(issue.params.pattern)];
          return { path: base, message: meaning ?? issue.message ?? 'is invalid' };
        }
        case 'required':
          return { path: join(base, String(issue.params.missingProperty)), message: 'is required' };
        case 'additionalProperties':
          return { path: join(base, String(issue.params.additionalProperty)), message: 'is not a known field' };
        case 'type':
          return { path: base, message: `must be ${typeWords(String(issue.params.type))}` };
        case 'minimum':
          return { path: base, message: `must be at least ${String(issue.params.limit)}` };
        case 'maximum':
          return { path: base, message: `must be at most ${String(issue.params.limit)}` };
        case 'minProperties': {
          const limit = Number(issue.params.limit);
          return {
            path: base,
            message: limit === 1 ? 'must have at least one field' : `must have at least ${limit} fields`,
          };
        }
        case 'maxProperties': {
          const limit = Number(issue.params.limit);
          return { path: base, message: limit === 0 ? 'must be empty' : `must have at most ${limit} fields` };
        }
        case 'format':
          return issue.params.format === 'date-time'
            ? {
                path: base,
                message:
                  'must be a date and time with its offset, such as 2026-11-25T10:00:00Z or 2026-11-25T11:00:00+01:00',
              }
            : { path: base, message: issue.message ?? 'is invalid' };
        case 'minItems': {
          const limit = Number(issue.params.limit);
          return { path: base, message: limit === 1 ? 'must not be empty' : `must have at least ${limit} items` };
        }
        case 'maxItems':
          return { path: base, message: `must have at most ${String(issue.params.limit)} items` };
        case 'uniqueItems':
          return {
            path: base,
            message: `must not list the same value twice (items ${String(issue.params.j)} and ${String(issue.params.i)} are the same)`,
          };
        case 'enum':
          return {
            path: base,
            message: `must be one of ${(issue.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
          };
        default:
          return { path: base, message: issue.message ?? 'is invalid' };
      }
    });
}

/** JSON Schema's type names as words: `integer,null` → "an integer or null". */
const TYPE_WORDS: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};
function typeWords(types: string): string {
  return types
    .split(',')
    .map((t) => TYPE_WORDS[t] ?? t)
    .join(' or ');
}

function join(base: string, key: string): string {
  return base ? `${base}.${key}` : key;
}

const FASTIFY_CODES: Record<string, () => AppError> = {
  // Any media type is read as JSON (json-body.ts); only one that does not parse is refused.
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () =>
    new AppError('bad_request', 'The Content-Type header is not a media type (type/subtype); send application/json'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new AppError('bad_request', 'The Content-Length header does not match the body'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () =>
    new AppError('validation_failed', 'The body is empty but Content-Type is application/json', {
      details: [{ path: 'body', message: 'is empty' }],
    }),
  FST_ERR_CTP_INVALID_JSON_BODY: () =>
    new AppError('validation_failed', 'The body is not valid JSON', {
      details: [{ path: 'body', message: 'is not valid JSON' }],
    }),
};

/**
 * An error of PostgreSQL's class 22, "data exception" (SQLSTATE 22xxx, as node-postgres reports
 * it in `code` beside `severity`): a value the database cannot take.
 */
function isDataException(error: Error): error is Error & { code: string } {
  const e = error as { code?: unknown; severity?: unknown };
  return typeof e.code === 'string' && /^22[0-9A-Z]{3}$/.test(e.code) && typeof e.severity === 'string';
}

/** The body limit of the route a request went to, and the server's (`DROVER_BODY_LIMIT_BYTES`). */
export interface BodyLimits {
  route: number;
  server: number;
}

/** A body over its route's limit: the limit in bytes, and the setting when it is the server's. */
export function bodyTooLarge(limits: BodyLimits): AppError {
  const which =
    limits.route === limits.server
      ? ' (the setting DROVER_BODY_LIMIT_BYTES); files go through presigned URLs'
      : ' of this route';
  return new AppError(
    'payload_too_large',
    `The request body is larger than the limit of ${limits.route} bytes${which}`,
  );
}

/** `Retry-After` of a database that takes no writes: it lasts until the operator acts (as a full disk under files). */
const DATABASE_UNWRITABLE_RETRY_AFTER_SECONDS = 60;

/** Normalises any error to the error shape of docs/errors.md; 5xx bodies never carry internals. */
/** Node's error of a request whose connection closed before its body ended (`abortIncoming`). */
function isClientAbort(error: Error): boolean {
  return (error as { code?: unknown }).code === 'ECONNRESET' && error.message === 'aborted';
}

export function toAppError(error: FastifyError | AppError | Error, limits?: BodyLimits): AppError {
  if (error instanceof AppError) return error;
  if ((error as FastifyError).code === 'FST_ERR_CTP_BODY_TOO_LARGE' && limits) return bodyTooLarge(limits);
  // The client closed its connection in the middle of its body (Node's `aborted`): its request's
  // end, which nobody reads, not a database cut off (ECONNRESET is also PostgreSQL's network error).
  if (isClientAbort(error)) {
    return new AppError('bad_request', 'The client closed the connection before its request body ended');
  }
  if (isDataException(error)) {
    // PostgreSQL refused a value of the request it cannot store (a NUL character, a number out of
    // its column's range): the request's fault, not the server's. SQLite takes such values.
    return new AppError('validation_failed', `A value of the request cannot be stored: ${error.message}`, {
      cause: error,
      details: [{ path: 'body', message: error.message }],
    });
  }
  if (isDatabaseUnreachable(error)) {
    // Whether a write in flight was committed cannot be known: the message promises nothing.
    return new AppError('unavailable', 'The database could not be reached; try again shortly', {
      cause: error,
      retryAfter: 5,
    });
  }
  const unwritable = databaseUnwritable(error);
  if (unwritable) {
    // The transaction that met it was rolled back, and every write fails the same way until the
    // operator acts: not a fault of the request (a 500), nor one that a retry in a few seconds mends.
    return new AppError(
      'unavailable',
      `The coordinator's database cannot take writes: ${unwritable.what} (${unwritable.code}); try again once its operator has ${unwritable.fix}`,
      { cause: error, retryAfter: DATABASE_UNWRITABLE_RETRY_AFTER_SECONDS },
    );
  }
  if (error instanceof StorageUnavailableError) {
    // The store's own words (bucket, status) go to the log with the cause, not to the caller.
    return new AppError(
      'storage_unavailable',
      'The object store of this storage binding could not be reached or refused; nothing was changed, try again later',
      { cause: error, retryAfter: 5 },
    );
  }
  const fe = error as FastifyError & { validationContext?: string; validation?: AjvIssue[] };
  if (fe.validation) {
    // A path id that is not even an id names nothing that could exist.
    if (fe.validationContext === 'params') {
      const name = fe.validation[0]?.instancePath.replace(/^\//, '') || 'id';
      return new AppError('not_found', `Not found: no resource has this ${name}`);
    }
    const details = validationDetails(fe.validation, fe.validationContext ?? '');
    return new AppError(
      'validation_failed',
      details.map((d) => `${d.path} ${d.message}`.trim()).join('; ') || 'Validation failed',
      { details },
    );
  }
  if (fe.code && FASTIFY_CODES[fe.code]) return FASTIFY_CODES[fe.code]!();
  if (error instanceof SyntaxError && 'statusCode' in error && fe.statusCode === 400) {
    return FASTIFY_CODES.FST_ERR_CTP_INVALID_JSON_BODY!();
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    const code = fe.statusCode === 404 ? 'not_found' : fe.statusCode === 413 ? 'payload_too_large' : 'bad_request';
    return new AppError(code, error.message);
  }
  return new AppError('internal', 'Internal server error', { cause: error });
}

/** RFC 9110: a 401 names the scheme to use. Agents sign their requests (docs/agent-protocol.md). */
function challengeOf(request: FastifyRequest): string {
  const tags = (request.routeOptions.schema as { tags?: string[] } | undefined)?.tags;
  return tags?.includes('agent') ? 'Signature realm="drover-agent"' : 'Bearer realm="drover"';
}

export function registerErrorHandling(app: FastifyInstance, allowed: AllowedMethods): void {
  app.setErrorHandler((error, request, reply) => {
    const server = app.initialConfig.bodyLimit ?? 1024 * 1024; // Fastify's default
    const appError = toAppError(error as FastifyError, {
      route: request.routeOptions.bodyLimit ?? server,
      server,
    });
    if (appError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.debug({ code: appError.code, reason: appError.message }, 'request refused');
    if (appError.statusCode === 401) void reply.header('www-authenticate', challengeOf(request));
    if (appError.retryAfter !== undefined) void reply.header('retry-after', String(appError.retryAfter));
    void reply.status(appError.statusCode).send(appError.toBody());
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const methods = allowed.of(path);
    if (methods.length > 0) {
      const error = new AppError(
        'method_not_allowed',
        `${request.method} is not allowed on ${path}; it answers to ${methods.join(', ')}`,
      );
      void reply.status(405).header('allow', methods.join(', ')).send(error.toBody());
      return;
    }
    const error = new AppError('not_found', `Route ${request.method} ${path} not found`);
    void reply.status(404).send(error.toBody());
  });
}
