export type StorageBackend = 'local' | 's3';

export interface StorageBinding {
  id: string;
  orgId: string;
  name: string;
  backend: StorageBackend;
  /** Backend settings; may hold secrets, never returned. */
  config: Record<string, unknown>;
  isDefault: boolean;
  createdAt: string;
}

export interface StorageBindingRepository {
  insert(binding: StorageBinding): Promise<void>;
  /** Inserts unless the organization has a (not deleted) binding of that name; false then. */
  insertIfNameFree(binding: StorageBinding): Promise<boolean>;
  findInOrg(orgId: string, id: string): Promise<StorageBinding | null>;
  /** Oldest first. */
  listByOrg(orgId: string): Promise<StorageBinding[]>;
  /**
   * Deletes the binding unless it holds files not `deleted` (counted under its lock: a file made at
   * the same moment is either counted or refused, storage in a deleted binding).
   */
  softDeleteIfEmpty(
    orgId: string,
    id: string,
    at: string,
  ): Promise<{ outcome: 'deleted' | 'not_found' } | { outcome: 'holds_files'; files: number }>;
}

/**
 * The hosts of the coordinator's own networks an organization's `s3` storage binding may reach
 * (DROVER_STORAGE_ALLOWED_HOSTS): `any`, or `host` / `host:port` entries (lower case; an IPv6
 * address in brackets). Every other host must resolve to public addresses only
 * (storage/endpoint-guard.ts).
 */
export type AllowedHosts = 'any' | ReadonlySet<string>;
