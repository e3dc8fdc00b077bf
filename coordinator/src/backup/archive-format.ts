import { SECRETS_KEY_FILE } from '../domain/secrets/secret-box.js';
import { SERVER_KEY_FILE } from '../domain/secrets/server-key.js';

/**
 * A coordinator's backup (docs/operations.md, "Backup and restore"): one gzipped tar archive whose
 * first member is `backup.json` (what made it: `BackupHeader`), whose last is `manifest.json`
 * (`Manifest`: every other member with its size and SHA-256), and in between the members a
 * restore writes into the data directory under the same names: the database snapshot, the key
 * files and the local storage backend's blobs with their `.meta` sidecars. The header comes first
 * so that a file that is not a backup, or one of a newer format, is refused at its first bytes;
 * the manifest comes last because it names the blobs' checksums, known once they are read.
 */

export const BACKUP_FORMAT = 'drover-coordinator-backup';
/** The format this build writes; it reads this one and every older one. */
export const BACKUP_FORMAT_VERSION = 1;
export const HEADER_MEMBER = 'backup.json';
export const MANIFEST_MEMBER = 'manifest.json';
export const DATABASE_MEMBER = 'drover.sqlite';
export const KEY_MEMBERS = [SERVER_KEY_FILE, SECRETS_KEY_FILE] as const;

/** `blobs/<aa>/<file id>` and its `.meta` sidecar, as storage/local-backend.ts names them. */
const BLOB_MEMBER = /^blobs\/([0-9a-f]{2})\/\1[0-9a-f]{6}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(\.meta)?$/;

export interface BackupHeader {
  format: typeof BACKUP_FORMAT;
  formatVersion: number;
  coordinatorVersion: string;
  /** ISO 8601: when the database snapshot was taken. */
  createdAt: string;
}

/** Where the files of the local storage backend are in this backup. */
export type BlobsInBackup =
  /** In the archive: every blob the snapshot's files reference that was still on disk. */
  | 'included'
  /** `--without-blobs` or `--keys-only`. */
  | 'left out'
  /** The coordinator keeps its files in a bucket (DROVER_STORAGE_URL): back that up on its own. */
  | 'in the bucket';

export interface ArchiveMember {
  path: string;
  size: number;
  sha256: string;
}

export interface Manifest extends BackupHeader {
  /** `sqlite`: the database is in the archive; `postgres`: only the keys (`--keys-only`). */
  database: 'sqlite' | 'postgres';
  /** The snapshot's schema version (its last migration); null without a database. */
  schemaVersion: number | null;
  blobs: BlobsInBackup;
  /** Every member but the header and the manifest, in archive order. */
  members: ArchiveMember[];
}

/** A member a restore may write into the data directory (never a path outside it). */
export function isDataMember(name: string): boolean {
  return name === DATABASE_MEMBER || (KEY_MEMBERS as readonly string[]).includes(name) || BLOB_MEMBER.test(name);
}

/** Why a file cannot be restored: not a backup, of a newer format, damaged. */
export class InvalidBackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidBackupError';
  }
}

/** The header as read from the archive's first member; throws InvalidBackupError. */
export function parseHeader(text: string): BackupHeader {
  const header = parseJson(text, HEADER_MEMBER);
  if (header.format !== BACKUP_FORMAT) throw new InvalidBackupError('it is not a Drover coordinator backup');
  const version = header.formatVersion;
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1) {
    throw new InvalidBackupError(`its ${HEADER_MEMBER} has no valid formatVersion`);
  }
  if (version > BACKUP_FORMAT_VERSION) {
    throw new InvalidBackupError(
      `it was made by a newer drover-coordinator (${String(header.coordinatorVersion)}, backup format ${version}; this one reads format ${BACKUP_FORMAT_VERSION}): restore it with that version`,
    );
  }
  return header as unknown as BackupHeader;
}

/** The manifest as read from the archive's last member; throws InvalidBackupError. */
export function parseManifest(text: string): Manifest {
  const manifest = parseJson(text, MANIFEST_MEMBER);
  const members = manifest.members;
  const valid =
    (manifest.database === 'sqlite' || manifest.database === 'postgres') &&
    ['included', 'left out', 'in the bucket'].includes(manifest.blobs as string) &&
    Array.isArray(members) &&
    members.every(
      (m: Partial<ArchiveMember>) =>
        typeof m?.path === 'string' &&
        isDataMember(m.path) &&
        Number.isSafeInteger(m.size) &&
        typeof m.sha256 === 'string' &&
        /^[0-9a-f]{64}$/.test(m.sha256),
    );
  if (!valid) throw new InvalidBackupError(`its ${MANIFEST_MEMBER} is not a valid manifest`);
  return manifest as unknown as Manifest;
}

function parseJson(text: string, member: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Reported below.
  }
  throw new InvalidBackupError(`its ${member} is not JSON`);
}
