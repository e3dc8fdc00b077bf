import { parse } from 'fast-querystring';
import { AppError } from '../errors.js';

/**
 * The router's query-string parser: Fastify's own (fast-querystring), which keeps a malformed
 * percent-encoding (`?q=%E0%A4%A`, `?q=%zz`) as its raw text. Such a query string is marked here
 * and refused with 400 as a malformed path is (docs/errors.md, `bad_request`), where it was
 * taken as text. The router cannot refuse from here: what this throws would escape the request.
 */
const MALFORMED = Symbol('malformed query string');

export function parseQueryString(query: string): Record<string, unknown> {
  const parsed = parse(query) as Record<string | symbol, unknown>;
  if (query.includes('%') && !decodes(query)) parsed[MALFORMED] = true;
  return parsed;
}

function decodes(query: string): boolean {
  for (const part of query.split(/[&=]/)) {
    if (!part.includes('%')) continue;
    try {
      decodeURIComponent(part);
    } catch {
      return false;
    }
  }
  return true;
}

/** The refusal of a query string `parseQueryString` marked, or undefined. */
export function queryStringError(query: unknown): AppError | undefined {
  return (query as Record<symbol, unknown> | undefined)?.[MALFORMED] === true
    ? new AppError('bad_request', 'The URL is not valid: its query string has a malformed percent-encoding')
    : undefined;
}
