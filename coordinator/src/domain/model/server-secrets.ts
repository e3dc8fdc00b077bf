/**
 * Server-wide secrets that every coordinator sharing the database must agree on (the session
 * signing key, the presign HMAC key). Created once; `getOrCreate` is race-free.
 */
export interface ServerSecretRepository {
  getOrCreate(name: string, create: () => string, at: string): Promise<string>;
  /** The stored value, or null when none is (read by `drover-coordinator backup --keys-only`). */
  get(name: string): Promise<string | null>;
}
