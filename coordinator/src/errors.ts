import { describeValue } from '@drover/shared';
/**
 * The one error model of the coordinator (docs/errors.md). Every error a route can answer with is
 * an AppError made from a code in this registry; the HTTP error handler turns it into
 * `{statusCode, code, message, details?}` and hides internals of anything else behind 500.
 */

export const ErrorCodes = {
  bad_request: {
    status: 400,
    description: 'The request could not be read (for example, a query string that is not valid).',
  },
  unauthorized: { status: 401, description: 'Credentials are missing, invalid, revoked or expired.' },
  sso_failed: {
    status: 401,
    description:
      'Single sign-on did not complete: the message says why (an unknown, used or expired sign-in, another browser, an ID token refused, an email not verified or its domain not allowed).',
  },
  forbidden: { status: 403, description: 'The credentials are valid but lack the right for this call.' },
  password_sign_in_off: {
    status: 403,
    description:
      'Password sign-in is turned off on this coordinator (`DROVER_PASSWORD_LOGIN=off`): sign in with single sign-on.',
  },
  device_sign_in_denied: {
    status: 403,
    description:
      "A command line's sign-in through the browser was denied there, or the approving user's sessions were all ended since.",
  },
  not_found: { status: 404, description: 'The resource or route does not exist, or is not visible to the caller.' },
  method_not_allowed: {
    status: 405,
    description: 'The path exists but not with this method; the `Allow` header lists the methods it takes.',
  },
  request_timeout: { status: 408, description: 'The request did not arrive in time; the connection is closed.' },
  conflict: { status: 409, description: 'The request conflicts with the current state of the resource.' },
  idempotency_conflict: { status: 409, description: 'The Idempotency-Key was used before with a different body.' },
  file_in_use: { status: 409, description: 'The file is referenced by a release that is not yanked.' },
  no_matching_agent: {
    status: 409,
    description: "No agent of the organization matches the trigger's label selector: nothing was created.",
  },
  reports_outdated: {
    status: 409,
    description:
      'The agent opened its stream claiming workflows and labels the coordinator does not hold: it is to report them again and reconnect.',
  },
  limit_reached: {
    status: 409,
    description:
      'The organization has as many of these as the server allows; `details` names the limit, its value and its setting.',
  },
  invitation_expired: {
    status: 410,
    description: 'The invitation has expired; an owner of the organization can invite again.',
  },
  invitation_revoked: {
    status: 410,
    description: 'The invitation was revoked by an owner of the organization, or declined by the invitee.',
  },
  device_sign_in_expired: {
    status: 410,
    description:
      "A command line's sign-in through the browser expired before it was approved, or its session was already handed out: start again.",
  },
  precondition_failed: {
    status: 412,
    description:
      "The resource was changed after the version `If-Match` names (its `ETag`); nothing was changed. `details` has its version now (a trigger's `updatedAt`, an agent's `revision`): read it again.",
  },
  payload_too_large: { status: 413, description: 'The request body is larger than the server accepts.' },
  unsupported_encoding: {
    status: 415,
    description: 'The request body is compressed (Content-Encoding), which the API does not take.',
  },
  range_not_satisfiable: { status: 416, description: 'The requested byte range lies outside the file.' },
  validation_failed: {
    status: 422,
    description: 'The input failed validation; `details` lists `{path, message}` items.',
  },
  rate_limited: { status: 429, description: 'A rate limit was exceeded.' },
  headers_too_large: { status: 431, description: 'The request headers are larger than the server accepts.' },
  internal: { status: 500, description: 'An unexpected server error; no internals are disclosed.' },
  unavailable: {
    status: 503,
    description:
      'The server is shutting down, or its database could not be reached or cannot take writes (its disk full or read-only).',
  },
  reconnect_shed: {
    status: 503,
    description: 'Too many agents are opening their streams at once: come back after `Retry-After` seconds.',
  },
  storage_unavailable: {
    status: 503,
    description: 'The object store of a storage binding could not be reached, or refused; nothing was changed.',
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ErrorCodes;

export interface ValidationDetail {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly statusCode: number;
  readonly code: ErrorCode;
  readonly details: unknown;
  /** Seconds after which a retry may succeed: sent as `Retry-After` (429, 503). */
  readonly retryAfter: number | undefined;

  constructor(code: ErrorCode, message: string, options?: { details?: unknown; cause?: unknown; retryAfter?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.statusCode = ErrorCodes[code].status;
    this.details = options?.details;
    this.retryAfter = options?.retryAfter;
  }

  toBody(): ErrorBody {
    return errorBody(this.code, this.message, this.details);
  }
}

/** The body of an error answer, for a code; without an AppError (and its stack) where none is needed. */
export function errorBody(code: ErrorCode, message: string, details?: unknown): ErrorBody {
  const body: ErrorBody = { statusCode: ErrorCodes[code].status, code, message };
  if (details !== undefined) body.details = details;
  return body;
}

export interface ErrorBody {
  statusCode: number;
  code: string;
  message: string;
  details?: unknown;
}

export const unauthorized = (message = 'Authentication required'): AppError => new AppError('unauthorized', message);
export const forbidden = (message = 'You do not have the right to do this'): AppError =>
  new AppError('forbidden', message);
export const notFound = (what: string): AppError => new AppError('not_found', `${what} not found`);
export const conflict = (
  message: string,
  code: 'conflict' | 'idempotency_conflict' | 'file_in_use' | 'no_matching_agent' = 'conflict',
) => new AppError(code, message);

const summarize = (details: ValidationDetail[]) =>
  details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ') || 'Validation failed';

/** A 422 with one detail per offending input. */
export function validationFailed(details: ValidationDetail[], message?: string): AppError {
  return new AppError('validation_failed', message ?? summarize(details), { details });
}

/**
 * A domain 422, whose paths name the request's fields (`params.env`), placed where the fields
 * came from (`body`): `body.params.env`. A message made of the paths is made again; a message of
 * its own is kept. Anything else is returned as it is.
 */
export function placeValidation(error: unknown, prefix: string): unknown {
  if (!(error instanceof AppError) || error.code !== 'validation_failed' || !Array.isArray(error.details)) return error;
  const details = error.details as ValidationDetail[];
  const placed = details.map((d) => ({ path: d.path ? `${prefix}.${d.path}` : prefix, message: d.message }));
  return validationFailed(placed, error.message === summarize(details) ? undefined : error.message);
}

/** A 422 for a single input. */
export function invalid(path: string, message: string): AppError {
  return validationFailed([{ path, message }]);
}

/** Describes a value for "expected X, got Y" messages. */
export { describeValue };
