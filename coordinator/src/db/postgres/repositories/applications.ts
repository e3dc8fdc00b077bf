import type { Application, ApplicationRepository } from '../../../domain/model/applications.js';
import type { PgPool } from '../pool.js';
import { all, isUniqueViolation, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

interface ApplicationRow {
  id: string;
  org_id: string;
  slug: string;
  update_workflow_name: string;
  default_channel: string;
  created_at: string;
  deleted_at: string | null;
}

const toApplication = (r: ApplicationRow): Application => ({
  id: r.id,
  orgId: r.org_id,
  slug: r.slug,
  updateWorkflowName: r.update_workflow_name,
  defaultChannel: r.default_channel,
  createdAt: r.created_at,
  deletedAt: r.deleted_at,
});

/** A slug is taken once among an organization's applications not deleted: its partial unique index decides. */
export function createApplicationRepository(pool: PgPool): ApplicationRepository {
  const inOrg = async (orgId: string, id: string) => {
    const row = await one<ApplicationRow>(
      pool,
      'SELECT * FROM applications WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL',
      [orgId, id],
    );
    return row ? toApplication(row) : null;
  };
  return {
    async insert(app) {
      try {
        await run(
          pool,
          `INSERT INTO applications (id, org_id, slug, update_workflow_name, default_channel, created_at, deleted_at)
           VALUES ($1, $2, $3, $4, $5, $6, NULL)`,
          [app.id, app.orgId, app.slug, app.updateWorkflowName, app.defaultChannel, app.createdAt],
        );
        return 'created';
      } catch (error) {
        if (isUniqueViolation(error, 'applications_org_slug')) return 'duplicate_slug';
        throw error;
      }
    },
    findInOrg: inOrg,
    async findById(id) {
      const row = await one<ApplicationRow>(pool, 'SELECT * FROM applications WHERE id = $1 AND deleted_at IS NULL', [
        id,
      ]);
      return row ? toApplication(row) : null;
    },
    async listByOrg(orgId) {
      const rows = await all<ApplicationRow>(
        pool,
        'SELECT * FROM applications WHERE org_id = $1 AND deleted_at IS NULL ORDER BY created_at, seq',
        [orgId],
      );
      return rows.map(toApplication);
    },
    async update(orgId, id, patch) {
      await run(
        pool,
        `UPDATE applications SET update_workflow_name = COALESCE($3, update_workflow_name),
           default_channel = COALESCE($4, default_channel)
         WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`,
        [orgId, id, patch.updateWorkflowName ?? null, patch.defaultChannel ?? null],
      );
      return inOrg(orgId, id);
    },
    delete(orgId, id, at, message) {
      return inTransaction(pool, async (tx) => {
        const row = await one<ApplicationRow>(
          tx,
          'SELECT * FROM applications WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE',
          [orgId, id],
        );
        if (!row) return null;
        const cancelled = await all<{ id: string }>(
          tx,
          `UPDATE jobs SET status = 'cancelled', error_message = $2, finished_at = $3
           WHERE status = 'pending' AND id IN (SELECT active_job_id FROM device_bindings
             WHERE application_id = $1 AND active_job_id IS NOT NULL)
           RETURNING id`,
          [id, message, at],
        );
        await run(tx, 'DELETE FROM device_bindings WHERE application_id = $1', [id]);
        await run(tx, 'DELETE FROM releases WHERE application_id = $1', [id]);
        await run(tx, 'UPDATE applications SET deleted_at = $1 WHERE id = $2', [at, id]);
        return { app: toApplication({ ...row, deleted_at: at }), cancelledJobIds: cancelled.map((r) => r.id) };
      });
    },
  };
}
