import type { Schema } from '@drover/shared/api';
import type { Caller } from '../callers.js';

/** A stored file's metadata (the storage API's answer). */
export type StoredFile = Schema<'StoredFile'>;

/**
 * Where the caller reaches files: the public storage API with an API token
 * (`/storage/files`), the organization's files with a session (`/orgs/:orgId/files`); both take
 * the same bodies and answer the same.
 */
export async function filesPath(caller: Caller): Promise<string> {
  return caller.kind === 'token' ? '/storage/files' : `/orgs/${await caller.orgId()}/files`;
}

/** The SHA-256 an answer's ETag carries (the local backend's blobs: `"<64 hex>"`), else null. */
export function sha256OfEtag(etag: string | string[] | undefined): string | null {
  const value = Array.isArray(etag) ? etag[0] : etag;
  return /^"([0-9a-f]{64})"$/i.exec(value ?? '')?.[1]?.toLowerCase() ?? null;
}
