import { roleWithArticle } from '@drover/shared';
import {
  type AuthenticatingApiToken,
  STORAGE_PERMISSIONS,
  type Grant,
  type StorageGrant,
  type StoragePermission,
} from '../model/api-tokens.js';
import { forbidden } from '../../errors.js';
import { findGrant } from '../tokens/grants.js';
import { can } from '../orgs/permissions.js';

/**
 * Who calls the files service: an API token (its storage grant decides), a member of the
 * organization from the dashboard (every binding, every permission), or the system (a schedule).
 * The token or the member is recorded as the creator of the files they upload.
 */
export interface FileCaller {
  orgId: string;
  scopes: readonly Grant[];
  /** The API token calling, or null. */
  tokenId: string | null;
  /** The member calling through the management API, or null. */
  userId: string | null;
  /**
   * Why the caller only reads whatever its grant says (a token whose issuer's role changes
   * nothing, a viewer's: domain/orgs/permissions.ts), or null.
   */
  readOnly?: string;
}

/** An API token calling the public storage API or handing files to a run. */
export function tokenFileCaller(
  token: Pick<AuthenticatingApiToken, 'id' | 'orgId' | 'scopes' | 'issuerRole'>,
): FileCaller {
  const caller: FileCaller = { orgId: token.orgId, scopes: token.scopes, tokenId: token.id, userId: null };
  if (token.issuerRole !== null && !can(token.issuerRole, 'files.write')) {
    caller.readOnly = `The API token's issuer is ${roleWithArticle(token.issuerRole)} of the organization: its tokens only read files`;
  }
  return caller;
}

/** A member of the organization: any file of any binding, read, write and delete. */
export function memberFileCaller(orgId: string, userId: string): FileCaller {
  return {
    orgId,
    scopes: [{ type: 'storage', bindingIds: null, permissions: [...STORAGE_PERMISSIONS] }],
    tokenId: null,
    userId,
  };
}

/** The system acting for the organization (a schedule's run): reads any of its files, nothing else. */
export function systemReaderFileCaller(orgId: string): FileCaller {
  return { orgId, scopes: [{ type: 'storage', bindingIds: null, permissions: ['read'] }], tokenId: null, userId: null };
}

/**
 * The token's storage grant when it holds `permission` (docs/storage.md); 403 when it
 * has no storage grant or the grant lacks the permission. Checked before any file is looked up,
 * so that a refusal says nothing about which files exist.
 */
export function requireStoragePermission(caller: FileCaller, permission: StoragePermission): StorageGrant {
  const grant = findGrant(caller.scopes, 'storage');
  if (!grant) throw forbidden('This API token has no storage grant');
  if (permission !== 'read' && caller.readOnly !== undefined) throw forbidden(caller.readOnly);
  if (!grant.permissions.includes(permission)) {
    throw forbidden(`This API token's storage grant lacks the \`${permission}\` permission`);
  }
  return grant;
}

/** Whether the grant covers the binding (`bindingIds: null`: every binding of the organization). */
export function grantCoversBinding(grant: Pick<StorageGrant, 'bindingIds'>, bindingId: string): boolean {
  return grant.bindingIds === null || grant.bindingIds.includes(bindingId);
}
