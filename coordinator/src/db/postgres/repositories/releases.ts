import type { CleanupRule, FileStatus } from '../../../domain/model/files.js';
import type {
  CheckArtifact,
  CreateReleaseResult,
  Release,
  ReleaseChange,
  ReleaseRepository,
  ReleaseStatus,
  UpdatePolicy,
} from '../../../domain/model/releases.js';
import type { PgClient, PgPool } from '../pool.js';
import { all, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

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

/**
 * `checkArtifact` decides whether a file can back a release (the domain's). A creation locks its
 * application's row (the next sequence is read and used by one creation at a time, whichever
 * coordinator makes it) and holds a share lock on the artifact's row, so the file cannot be
 * claimed for deletion meanwhile (files.ts). A status change locks the release's row.
 */
export function createReleaseRepository(pool: PgPool, checkArtifact: CheckArtifact): ReleaseRepository {
  const inApp = async (db: PgPool | PgClient, appId: string, id: string, lock = '') => {
    const row = await one<ReleaseRow>(db, `SELECT * FROM releases WHERE application_id = $1 AND id = $2 ${lock}`, [
      appId,
      id,
    ]);
    return row ? toRelease(row) : null;
  };

  /** Applies a conditional UPDATE under the release's lock; reads it back to tell applied from conflict. */
  const change = (appId: string, id: string, sql: string, values: unknown[]) =>
    inTransaction(pool, async (tx): Promise<ReleaseChange> => {
      if (!(await inApp(tx, appId, id, 'FOR UPDATE'))) return { outcome: 'not_found' };
      const applied = (await run(tx, sql, values)) === 1;
      return { outcome: applied ? 'applied' : 'conflict', release: (await inApp(tx, appId, id))! };
    });

  return {
    create(r) {
      return inTransaction(pool, async (tx): Promise<CreateReleaseResult> => {
        await run(tx, 'SELECT 1 FROM applications WHERE id = $1 FOR NO KEY UPDATE', [r.applicationId]);
        const row = await one<{
          status: FileStatus;
          cleanup_rule: CleanupRule;
          size: number | null;
          sha256: string | null;
        }>(
          tx,
          `SELECT f.status, f.cleanup_rule, f.size, f.sha256 FROM files f
             JOIN storage_bindings b ON b.id = f.binding_id AND b.deleted_at IS NULL
           WHERE f.org_id = $1 AND f.id = $2 FOR SHARE OF f`,
          [r.orgId, r.artifactFileId],
        );
        const file = checkArtifact(
          row ? { status: row.status, cleanupRule: row.cleanup_rule, size: row.size, sha256: row.sha256 } : null,
        );
        if (!file.ok) {
          const { ok: _ok, ...refusal } = file;
          return { outcome: 'bad_artifact', ...refusal };
        }
        const created = await one<ReleaseRow>(
          tx,
          `INSERT INTO releases (id, application_id, version, sequence, channel, update_policy, status,
             artifact_file_id, checksum_sha256, size, notes, created_at, published_at, yanked_at)
           VALUES ($1, $2, $3, (SELECT COALESCE(MAX(sequence), 0) + 1 FROM releases WHERE application_id = $2), $4, $5,
             'draft', $6, $7, $8, $9,
             -- Creations wait for one another here (the application's lock), not in the order they
             -- read the clock: a release is never older than the one with the previous sequence.
             GREATEST($10::timestamptz, (SELECT MAX(created_at) FROM releases WHERE application_id = $2)),
             NULL, NULL)
           RETURNING *`,
          [
            r.id,
            r.applicationId,
            r.version,
            r.channel,
            r.updatePolicy,
            r.artifactFileId,
            file.sha256,
            file.size,
            r.notes,
            r.createdAt,
          ],
        );
        return { outcome: 'created', release: toRelease(created!) };
      });
    },
    findInApp(applicationId, id) {
      return inApp(pool, applicationId, id);
    },
    async list(applicationId, filter = {}) {
      const rows = await all<ReleaseRow>(
        pool,
        `SELECT * FROM releases WHERE application_id = $1 AND ($2::text IS NULL OR channel = $2)
           AND ($3::text IS NULL OR status = $3) ORDER BY sequence DESC`,
        [applicationId, filter.channel ?? null, filter.status ?? null],
      );
      return rows.map(toRelease);
    },
    publish(applicationId, id, at) {
      return change(
        applicationId,
        id,
        "UPDATE releases SET status = 'published', published_at = $3 WHERE application_id = $1 AND id = $2 AND status = 'draft'",
        [applicationId, id, at],
      );
    },
    yank(applicationId, id, at) {
      return change(
        applicationId,
        id,
        `UPDATE releases SET status = 'yanked', yanked_at = $3
         WHERE application_id = $1 AND id = $2 AND status IN ('draft', 'published')`,
        [applicationId, id, at],
      );
    },
    updateDraft(applicationId, id, patch) {
      return change(
        applicationId,
        id,
        `UPDATE releases SET version = COALESCE($3, version), channel = COALESCE($4, channel),
           update_policy = COALESCE($5, update_policy), notes = CASE WHEN $6::boolean THEN $7 ELSE notes END
         WHERE application_id = $1 AND id = $2 AND status = 'draft'`,
        [
          applicationId,
          id,
          patch.version ?? null,
          patch.channel ?? null,
          patch.updatePolicy ?? null,
          patch.notes !== undefined,
          patch.notes ?? null,
        ],
      );
    },
  };
}
