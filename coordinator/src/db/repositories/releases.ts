import type { CleanupRule, FileStatus } from '../../domain/model/files.js';
import type {
  CheckArtifact,
  CheckReleaseSignature,
  CreateReleaseResult,
  NewRelease,
  Release,
  ReleaseChange,
  ReleaseRepository,
  ReleaseStatus,
  UpdatePolicy,
} from '../../domain/model/releases.js';
import { command, flag, one, query, run, type Command, type Database, type Flow } from '../sql/index.js';
import { lockApplication } from './parent-locks.js';

export interface ReleaseRow {
  id: string;
  application_id: string;
  version: string;
  sequence: number;
  channel: string;
  update_policy: UpdatePolicy;
  status: ReleaseStatus;
  artifact_file_id: string;
  checksum_sha256: string;
  size: number;
  notes: string | null;
  signature: string | null;
  created_at: string;
  published_at: string | null;
  yanked_at: string | null;
}

export const toRelease = (r: ReleaseRow): Release => ({
  id: r.id,
  applicationId: r.application_id,
  version: r.version,
  sequence: r.sequence,
  channel: r.channel,
  updatePolicy: r.update_policy,
  status: r.status,
  artifactFileId: r.artifact_file_id,
  checksumSha256: r.checksum_sha256,
  size: r.size,
  notes: r.notes,
  signature: r.signature,
  createdAt: r.created_at,
  publishedAt: r.published_at,
  yankedAt: r.yanked_at,
});

// The file's row only (the storage binding in a subquery): it is the one shared-locked.
const ARTIFACT = query<
  { status: FileStatus; cleanup_rule: CleanupRule; size: number | null; sha256: string | null },
  [string, string]
>(
  (d) => `SELECT f.status, f.cleanup_rule, f.size, f.sha256 FROM files f
   WHERE f.org_id = ? AND f.id = ?
     AND EXISTS (SELECT 1 FROM storage_bindings b WHERE b.id = f.binding_id AND b.deleted_at IS NULL) ${d.forShare}`,
);
interface NewReleaseParams {
  id: string;
  applicationId: string;
  version: string;
  channel: string;
  updatePolicy: UpdatePolicy;
  artifactFileId: string;
  checksumSha256: string;
  size: number;
  notes: string | null;
  sequence: number;
  signature: string | null;
  createdAt: string;
}
const SIGNING_FACTS = query<{ slug: string; release_keys: string | null; max_sequence: number }, [string]>(
  `SELECT a.slug, a.release_keys,
     (SELECT COALESCE(MAX(r.sequence), 0) FROM releases r WHERE r.application_id = a.id) AS max_sequence
   FROM applications a WHERE a.id = ? AND a.deleted_at IS NULL`,
);
const INSERT = query<ReleaseRow, NewReleaseParams>(
  `INSERT INTO releases (id, application_id, version, sequence, channel, update_policy, status, artifact_file_id,
     checksum_sha256, size, notes, signature, created_at, published_at, yanked_at)
   VALUES (@id, @applicationId, @version, @sequence,
     @channel, @updatePolicy, 'draft', @artifactFileId, @checksumSha256, @size, @notes, @signature,
     -- Creations wait for one another (the application's lock), not in the order they read the
     -- clock: a release is never older than the one with the previous sequence.
     COALESCE((SELECT MAX(created_at) FROM releases WHERE application_id = @applicationId
       AND created_at > @createdAt), @createdAt),
     NULL, NULL)
   RETURNING *`,
);
export const IN_APP = query<ReleaseRow, [string, string]>('SELECT * FROM releases WHERE application_id = ? AND id = ?');
export const IN_APP_LOCKED = query<ReleaseRow, [string, string]>(
  (d) => `SELECT * FROM releases WHERE application_id = ? AND id = ? ${d.forUpdate}`,
);
const LIST = query<ReleaseRow, { appId: string; channel: string | null; status: string | null }>(
  `SELECT * FROM releases WHERE application_id = @appId AND (CAST(@channel AS TEXT) IS NULL OR channel = @channel)
     AND (CAST(@status AS TEXT) IS NULL OR status = @status) ORDER BY sequence DESC`,
);
export const PUBLISH = command<[string, string, string]>(
  "UPDATE releases SET status = 'published', published_at = ? WHERE application_id = ? AND id = ? AND status = 'draft'",
);
export const YANK = command<[string, string, string]>(
  `UPDATE releases SET status = 'yanked', yanked_at = ?
   WHERE application_id = ? AND id = ? AND status IN ('draft', 'published')`,
);
const UPDATE_DRAFT = command<[string | null, string | null, UpdatePolicy | null, 1 | 0, string | null, string, string]>(
  `UPDATE releases SET version = COALESCE(?, version), channel = COALESCE(?, channel),
     update_policy = COALESCE(?, update_policy), notes = CASE WHEN ? = 1 THEN ? ELSE notes END
   WHERE application_id = ? AND id = ? AND status = 'draft'`,
);

/**
 * `checkArtifact` decides whether a file can back a release (the domain's). A creation locks its
 * application's row (the next sequence is read and used by one creation at a time, whichever
 * coordinator makes it; SQLite's writer takes the write lock at BEGIN) and holds a share lock on the
 * artifact's row, so the file cannot be claimed for deletion meanwhile (files.ts). A status change
 * locks the release's row and reads it back to tell applied from conflict.
 */
export function createReleaseRepository(
  db: Database,
  checkArtifact: CheckArtifact,
  checkReleaseSignature: CheckReleaseSignature,
): ReleaseRepository {
  function* create(r: NewRelease): Flow<CreateReleaseResult> {
    yield* lockApplication(r.applicationId);
    // Read under the application's lock: no other creation takes a sequence meanwhile, and a
    // deletion that went first is seen (its tombstone).
    const facts = yield* one(SIGNING_FACTS, [r.applicationId]);
    if (!facts) return { outcome: 'not_found' };
    const row = yield* one(ARTIFACT, [r.orgId, r.artifactFileId]);
    const file = checkArtifact(
      row ? { status: row.status, cleanupRule: row.cleanup_rule, size: row.size, sha256: row.sha256 } : null,
    );
    if (!file.ok) {
      const { ok: _ok, ...refusal } = file;
      return { outcome: 'bad_artifact', ...refusal };
    }
    const maxSequence = Number(facts.max_sequence);
    const refusal = checkReleaseSignature({
      app: {
        slug: facts.slug,
        releaseKeys: facts.release_keys === null ? null : (JSON.parse(facts.release_keys) as string[]),
      },
      version: r.version,
      sequence: r.sequence,
      signature: r.signature,
      maxSequence,
      sha256: file.sha256,
      size: file.size,
    });
    if (refusal) return { outcome: 'refused', refusal };
    const created = yield* one(INSERT, {
      id: r.id,
      applicationId: r.applicationId,
      version: r.version,
      channel: r.channel,
      updatePolicy: r.updatePolicy,
      artifactFileId: r.artifactFileId,
      checksumSha256: file.sha256,
      size: file.size,
      notes: r.notes,
      sequence: r.sequence ?? maxSequence + 1,
      signature: r.signature,
      createdAt: r.createdAt,
    });
    return { outcome: 'created', release: toRelease(created as ReleaseRow) };
  }

  function change<P extends unknown[]>(appId: string, id: string, update: Command<P>, params: P) {
    return db.transaction(
      function* (): Flow<ReleaseChange> {
        if (!(yield* one(IN_APP_LOCKED, [appId, id]))) return { outcome: 'not_found' };
        const applied = (yield* run(update, params)) === 1;
        return { outcome: applied ? 'applied' : 'conflict', release: toRelease((yield* one(IN_APP, [appId, id]))!) };
      },
      { immediate: true },
    );
  }

  return {
    create(release) {
      return db.transaction(() => create(release), { immediate: true });
    },
    async findInApp(applicationId, id) {
      const row = await db.one(IN_APP, [applicationId, id]);
      return row ? toRelease(row) : null;
    },
    async list(applicationId, filter = {}) {
      const rows = await db.all(LIST, {
        appId: applicationId,
        channel: filter.channel ?? null,
        status: filter.status ?? null,
      });
      return rows.map(toRelease);
    },
    publish(applicationId, id, at) {
      return change(applicationId, id, PUBLISH, [at, applicationId, id]);
    },
    updateDraft(applicationId, id, patch) {
      return change(applicationId, id, UPDATE_DRAFT, [
        patch.version ?? null,
        patch.channel ?? null,
        patch.updatePolicy ?? null,
        flag(patch.notes !== undefined),
        patch.notes ?? null,
        applicationId,
        id,
      ]);
    },
  };
}
