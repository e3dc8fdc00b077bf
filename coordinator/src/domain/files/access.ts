import type { ApiToken } from '../model/api-tokens.js';
import { forbidden } from '../../errors.js';
import { findGrant, type StorageGrant, type StoragePermission } from '../grants.js';

/** What the files service needs of the calling API token. */
export type FileCaller = Pick<ApiToken, 'id' | 'orgId' | 'scopes'>;

/**
 * The token's storage grant when it holds `permission` (docs/storage.md); 403 when it
 * has no storage grant or the grant lacks the permission. Checked before any file is looked up,
 * so that a refusal says nothing about which files exist.
 */
export function requireStoragePermission(caller: FileCaller, permission: StoragePermission): StorageGrant {
  const grant = findGrant(caller.scopes, 'storage');
  if (!grant) throw forbidden('This API token has no storage grant');
  if (!grant.permissions.includes(permission)) {
    throw forbidden(`This API token's storage grant lacks the \`${permission}\` permission`);
  }
  return grant;
}

/** Whether the grant covers the binding (`bindingIds: null`: every binding of the organization). */
export function grantCoversBinding(grant: Pick<StorageGrant, 'bindingIds'>, bindingId: string): boolean {
  return grant.bindingIds === null || grant.bindingIds.includes(bindingId);
}
