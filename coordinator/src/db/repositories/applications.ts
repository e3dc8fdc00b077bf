import type { Application, ApplicationRepository } from '../../domain/model/applications.js';
import type { Db } from '../database.js';

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

const isUniqueViolation = (error: unknown): boolean => (error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE';

export function createApplicationRepository(db: Db): ApplicationRepository {
  const insert = db.prepare(
    `INSERT INTO applications (id, org_id, slug, update_workflow_name, default_channel, created_at, deleted_at)
     VALUES (@id, @orgId, @slug, @updateWorkflowName, @defaultChannel, @createdAt, NULL)`,
  );
  const inOrg = db.prepare<[string, string], ApplicationRow>(
    'SELECT * FROM applications WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
  );
  const byId = db.prepare<[string], ApplicationRow>('SELECT * FROM applications WHERE id = ? AND deleted_at IS NULL');
  const list = db.prepare<[string], ApplicationRow>(
    'SELECT * FROM applications WHERE org_id = ? AND deleted_at IS NULL ORDER BY created_at, rowid',
  );
  const update = db.prepare(
    `UPDATE applications SET update_workflow_name = COALESCE(@updateWorkflowName, update_workflow_name),
       default_channel = COALESCE(@defaultChannel, default_channel)
     WHERE org_id = @orgId AND id = @id AND deleted_at IS NULL`,
  );
  const tombstone = db.prepare(
    'UPDATE applications SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
  );
  const cancelPending = db.prepare<[{ appId: string; message: string; at: string }], { id: string }>(
    `UPDATE jobs SET status = 'cancelled', error_message = @message, finished_at = @at
     WHERE status = 'pending' AND id IN (SELECT active_job_id FROM device_bindings
       WHERE application_id = @appId AND active_job_id IS NOT NULL)
     RETURNING id`,
  );
  const deleteBindings = db.prepare('DELETE FROM device_bindings WHERE application_id = ?');
  const deleteReleases = db.prepare('DELETE FROM releases WHERE application_id = ?');

  const remove = db.transaction((orgId: string, id: string, at: string, message: string) => {
    const row = inOrg.get(orgId, id);
    if (!row) return null;
    const cancelledJobIds = cancelPending.all({ appId: id, message, at }).map((r) => r.id);
    deleteBindings.run(id);
    deleteReleases.run(id);
    tombstone.run(at, orgId, id);
    return { app: toApplication({ ...row, deleted_at: at }), cancelledJobIds };
  });

  return {
    async insert(app) {
      try {
        insert.run(app);
        return 'created';
      } catch (error) {
        if (isUniqueViolation(error)) return 'duplicate_slug';
        throw error;
      }
    },
    async findInOrg(orgId, id) {
      const row = inOrg.get(orgId, id);
      return row ? toApplication(row) : null;
    },
    async findById(id) {
      const row = byId.get(id);
      return row ? toApplication(row) : null;
    },
    async listByOrg(orgId) {
      return list.all(orgId).map(toApplication);
    },
    async update(orgId, id, patch) {
      update.run({
        orgId,
        id,
        updateWorkflowName: patch.updateWorkflowName ?? null,
        defaultChannel: patch.defaultChannel ?? null,
      });
      const row = inOrg.get(orgId, id);
      return row ? toApplication(row) : null;
    },
    async delete(orgId, id, at, message) {
      return remove.immediate(orgId, id, at, message);
    },
  };
}
