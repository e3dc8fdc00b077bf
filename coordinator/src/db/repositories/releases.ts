import type { CleanupRule, FileStatus } from '../../domain/model/files.js';
import type {
  CheckArtifact,
  CreateReleaseResult,
  NewRelease,
  Release,
  ReleaseChange,
  ReleaseRepository,
  ReleaseStatus,
  UpdatePolicy,
} from '../../domain/model/releases.js';
import type { Db } from '../database.js';

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
  createdAt: r.created_at,
  publishedAt: r.published_at,
  yankedAt: r.yanked_at,
});

interface ArtifactRow {
  status: FileStatus;
  cleanup_rule: CleanupRule;
  size: number | null;
  sha256: string | null;
}

/** `checkArtifact` decides whether a file can back a release (the domain's). */
export function createReleaseRepository(db: Db, checkArtifact: CheckArtifact): ReleaseRepository {
  const artifact = db.prepare<[string, string], ArtifactRow>(
    `SELECT f.status, f.cleanup_rule, f.size, f.sha256 FROM files f
       JOIN storage_bindings b ON b.id = f.binding_id AND b.deleted_at IS NULL
     WHERE f.org_id = ? AND f.id = ?`,
  );
  const nextSequence = db.prepare<[string], { next: number }>(
    'SELECT COALESCE(MAX(sequence), 0) + 1 AS next FROM releases WHERE application_id = ?',
  );
  const insert = db.prepare(
    `INSERT INTO releases (id, application_id, version, sequence, channel, update_policy, status, artifact_file_id,
       checksum_sha256, size, notes, created_at, published_at, yanked_at)
     VALUES (@id, @applicationId, @version, @sequence, @channel, @updatePolicy, 'draft', @artifactFileId,
       @checksumSha256, @size, @notes, @createdAt, NULL, NULL)`,
  );
  const inApp = db.prepare<[string, string], ReleaseRow>('SELECT * FROM releases WHERE application_id = ? AND id = ?');
  const list = db.prepare<[{ appId: string; channel: string | null; status: string | null }], ReleaseRow>(
    `SELECT * FROM releases WHERE application_id = @appId AND (@channel IS NULL OR channel = @channel)
       AND (@status IS NULL OR status = @status) ORDER BY sequence DESC`,
  );
  const toPublished = db.prepare(
    "UPDATE releases SET status = 'published', published_at = ? WHERE application_id = ? AND id = ? AND status = 'draft'",
  );
  const toYanked = db.prepare(
    "UPDATE releases SET status = 'yanked', yanked_at = ? WHERE application_id = ? AND id = ? AND status IN ('draft', 'published')",
  );
  const updateDraft = db.prepare(
    `UPDATE releases SET version = COALESCE(@version, version), channel = COALESCE(@channel, channel),
       update_policy = COALESCE(@updatePolicy, update_policy),
       notes = CASE WHEN @setNotes = 1 THEN @notes ELSE notes END
     WHERE application_id = @appId AND id = @id AND status = 'draft'`,
  );

  const create = db.transaction((r: NewRelease): CreateReleaseResult => {
    const row = artifact.get(r.orgId, r.artifactFileId);
    const file = checkArtifact(
      row ? { status: row.status, cleanupRule: row.cleanup_rule, size: row.size, sha256: row.sha256 } : null,
    );
    if (!file.ok) {
      const { ok: _ok, ...refusal } = file;
      return { outcome: 'bad_artifact', ...refusal };
    }
    const sequence = (nextSequence.get(r.applicationId) as { next: number }).next;
    insert.run({
      id: r.id,
      applicationId: r.applicationId,
      version: r.version,
      sequence,
      channel: r.channel,
      updatePolicy: r.updatePolicy,
      artifactFileId: r.artifactFileId,
      checksumSha256: file.sha256,
      size: file.size,
      notes: r.notes,
      createdAt: r.createdAt,
    });
    return { outcome: 'created', release: toRelease(inApp.get(r.applicationId, r.id) as ReleaseRow) };
  });

  /** Applies a conditional UPDATE; reads the release back to tell applied from conflict. */
  const change = (appId: string, id: string, apply: () => number): ReleaseChange => {
    const before = inApp.get(appId, id);
    if (!before) return { outcome: 'not_found' };
    const applied = apply() === 1;
    const after = toRelease(inApp.get(appId, id) as ReleaseRow);
    return { outcome: applied ? 'applied' : 'conflict', release: after };
  };

  return {
    async create(release) {
      // IMMEDIATE: the sequence is read and used under the write lock, also across processes.
      return create.immediate(release);
    },
    async findInApp(applicationId, id) {
      const row = inApp.get(applicationId, id);
      return row ? toRelease(row) : null;
    },
    async list(applicationId, filter = {}) {
      return list
        .all({ appId: applicationId, channel: filter.channel ?? null, status: filter.status ?? null })
        .map(toRelease);
    },
    async publish(applicationId, id, at) {
      return change(applicationId, id, () => toPublished.run(at, applicationId, id).changes);
    },
    async yank(applicationId, id, at) {
      return change(applicationId, id, () => toYanked.run(at, applicationId, id).changes);
    },
    async updateDraft(applicationId, id, patch) {
      return change(
        applicationId,
        id,
        () =>
          updateDraft.run({
            appId: applicationId,
            id,
            version: patch.version ?? null,
            channel: patch.channel ?? null,
            updatePolicy: patch.updatePolicy ?? null,
            setNotes: patch.notes === undefined ? 0 : 1,
            notes: patch.notes ?? null,
          }).changes,
      );
    },
  };
}
