/**
 * The dashboard's only way to the coordinator: JSON over the management API (/v1), with the
 * session cookie. Every answer that is not 2xx becomes an ApiError carrying the API's error body.
 */
import type { Schema } from '@drover/shared/api';

/** A problem of a 422 `validation_failed`: where (`body.name`) and what. */
export type ErrorDetail = Extract<Schema<'ErrorBody'>['details'], unknown[]>[number];

/** The API's error body: `{statusCode, code, message, details?}`. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
    /** Seconds, from a 429's Retry-After. */
    readonly retryAfter: number | null = null,
    /** A 401 of a call made with the session, which ended (not a refused sign-in). */
    readonly sessionEnded = false,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The message of the detail at `path` (e.g. `body.name`), if the API named it. */
  detail(path: string): string | undefined {
    return this.details.find((d) => d.path === path)?.message;
  }
}

/** Thrown when the coordinator cannot be reached at all. */
export const UNREACHABLE = 'unreachable';

/**
 * Whether `error` is the 401 of a signed-in call: the session ended (expired, signed out
 * elsewhere). main.tsx decides what follows: a banner when a background read met it, sign-in
 * when it answered something the user did.
 */
export const sessionEnded = (error: unknown): boolean => error instanceof ApiError && error.sessionEnded;

declare const encoded: unique symbol;

/**
 * A path of the management API (after `/v1`) made by apiPath, so with every value in it encoded.
 * api and apiPage take nothing else: a path cannot be pasted together from a raw id.
 */
export type ApiPath = string & { readonly [encoded]: true };

/**
 * A path of the management API, each value put in encoded: apiPath`/jobs/${id}` is `/jobs/a%2Fb`
 * for `a/b`, never another endpoint. The router decodes an address's parameters (`%2F` is `/`),
 * so a crafted link could otherwise make the dashboard call any path with the session cookie and
 * the CSRF header. Text and numbers go through encodeURIComponent; a whole query, right after
 * `?`, is a URLSearchParams, put in as it serializes (encoded already). A value that would be a
 * whole path segment `.`, `..` or nothing is refused with a 404: the browser would resolve it,
 * encoded or not (`%2E%2E` is `..` too), and no resource is named so.
 */
export function apiPath(
  strings: TemplateStringsArray,
  ...values: readonly (string | number | URLSearchParams)[]
): ApiPath {
  let path = strings[0]!;
  values.forEach((value, i) => {
    const query = path.endsWith('?');
    if (query !== value instanceof URLSearchParams) {
      throw new TypeError(`apiPath: a URLSearchParams goes right after "?", and only there (in ${path}…)`);
    }
    if (value instanceof URLSearchParams) {
      path += value.toString();
    } else {
      const text = String(value);
      if (!path.includes('?') && (text === '' || text === '.' || text === '..')) {
        throw new ApiError(404, 'not_found', `No resource is named ${JSON.stringify(text)}`);
      }
      path += encodeURIComponent(text);
    }
    path += strings[i + 1]!;
  });
  return path as ApiPath;
}

export interface CallOptions {
  body?: unknown;
  /** Headers of the call's own (a change's `If-Match`). */
  headers?: Record<string, string>;
  /** A 401 is the caller's to explain (sign-in), not a session that ended. */
  expectUnauthorized?: boolean;
}

export async function api<T>(method: string, path: ApiPath, options: CallOptions = {}): Promise<T> {
  return (await call(method, path, options)).body as T;
}

/** A page of a newest-first list and the cursor of the next one (the `x-next-cursor` header). */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  /** How many items match on every page (the `x-total-count` header), where the list says it. */
  total: number | null;
}

/** A GET of one page of a paged list (docs/management.md: `x-next-cursor`, `cursor`). */
export async function apiPage<T>(path: ApiPath): Promise<Page<T>> {
  const { body, headers } = await call('GET', path, {});
  const total = headers.get('x-total-count');
  return { items: body as T[], nextCursor: headers.get('x-next-cursor'), total: total === null ? null : Number(total) };
}

async function call(method: string, path: ApiPath, options: CallOptions): Promise<{ body: unknown; headers: Headers }> {
  // The custom header is what a cross-site form cannot send: the coordinator requires it on
  // every state change made with the session cookie.
  const headers: Record<string, string> = { ...options.headers, accept: 'application/json', 'x-drover-csrf': '1' };
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  let res: Response;
  try {
    res = await fetch(`/v1${path}`, { method, headers, body, credentials: 'same-origin' });
  } catch {
    throw new ApiError(0, UNREACHABLE, 'The coordinator cannot be reached; check that it is running');
  }
  const text = await res.text();
  const parsed: unknown = text ? safeJson(text) : undefined;
  if (res.ok) return { body: parsed, headers: res.headers };
  throw toApiError(res, parsed, res.status === 401 && !options.expectUnauthorized);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function toApiError(res: Response, body: unknown, sessionEnded: boolean): ApiError {
  const b = (body ?? {}) as { code?: unknown; message?: unknown; details?: unknown };
  const retry = Number(res.headers.get('retry-after'));
  return new ApiError(
    res.status,
    typeof b.code === 'string' ? b.code : 'error',
    typeof b.message === 'string' ? b.message : `The coordinator answered ${res.status} ${res.statusText}`,
    Array.isArray(b.details) ? (b.details as ErrorDetail[]) : [],
    Number.isFinite(retry) && retry > 0 ? retry : null,
    sessionEnded,
  );
}
