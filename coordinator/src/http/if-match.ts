import { AppError, describeValue } from '../errors.js';

/**
 * Versions of what operators edit, as entity tags: a resource's answer carries its version as
 * `ETag`, and a change sent with it in `If-Match` is refused with 412 once the resource changed
 * since (a trigger's `updatedAt`, an agent's `revision`). Without `If-Match`, or with `*`, a
 * change is made onto the resource as it is.
 */

/** A version as a strong entity tag. */
export const entityTag = (version: string | number): string => `"${version}"`;

/** The `ETag` header an answer documents: `what`'s version. */
export const etagHeader = (what: string, field: string) =>
  ({ etag: { type: 'string', description: `${what}'s version, its ${field} quoted: a change's If-Match` } }) as const;

/** The `If-Match` header a change documents. */
export const ifMatchHeader = (what: string) =>
  ({
    'if-match': {
      type: 'string',
      description: `the ETag of the ${what} the change was made from: refused with 412 precondition_failed, nothing changed, once the ${what} changed since; * or none: the change is made onto the ${what} as it is`,
    },
  }) as const;

/**
 * The version an `If-Match` names: undefined for none or `*` (any there is); a weak tag or a list
 * is refused (400), as the one version a change is made from is one strong tag.
 */
export function ifMatchVersion(header: string | undefined, what: string): string | undefined {
  const value = header?.trim();
  if (value === undefined || value === '' || value === '*') return undefined;
  const match = /^"([^"]*)"$/.exec(value);
  if (!match) {
    throw new AppError(
      'bad_request',
      `If-Match must be one ETag of the ${what}, as its answer gave it (in double quotes), or *; got ${describeValue(value)}`,
    );
  }
  return match[1];
}
