import { ApiError, CliError } from '../errors.js';

/** The storage API's 403s for an API token without the grant a transfer needs (coordinator: domain/files/access.ts). */
const GRANT_REFUSED = /has no storage grant|storage grant lacks the/;

/**
 * An API token's refusal by the storage API, for want of a storage grant or of the permission
 * the transfer needs (`read` to download, `write` to upload), with what to do next: the API's
 * message, then how to issue a token that may. Any other error unchanged.
 */
export function storageGrantRefusal(error: unknown, permissions: 'read' | 'read,write'): unknown {
  if (!(error instanceof ApiError) || error.status !== 403 || !GRANT_REFUSED.test(error.message)) return error;
  return new CliError(
    `${error.message}: use a token whose grant allows it, issued by a member signed in with ` +
      `\`drover api-token create --name <name> --storage ${permissions}\` (or the dashboard's API tokens page)`,
    undefined,
    { cause: error },
  );
}
