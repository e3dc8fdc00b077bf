import type { Application, ApplicationRepository } from '../../domain/model/applications.js';
import type { ChatProvider } from '../../domain/model/triggers.js';
import { all, command, flag, isUniqueViolation, one, query, run, type Database } from '../sql/index.js';

/** A row of `applications`, as both databases give it. */
export interface ApplicationRow {
  id: string;
  org_id: string;
  slug: string;
  update_workflow_name: string;
  default_channel: string;
  notify_provider: ChatProvider | null;
  notify_team_id: string | null;
  notify_channel_id: string | null;
  device_selector: string | null;
  created_at: string;
  deleted_at: string | null;
}

export const toApplication = (r: ApplicationRow): Application => ({
  id: r.id,
  orgId: r.org_id,
  slug: r.slug,
  updateWorkflowName: r.update_workflow_name,
  defaultChannel: r.default_channel,
  notify:
    r.notify_provider === null
      ? null
      : { provider: r.notify_provider, teamId: r.notify_team_id!, channelId: r.notify_channel_id! },
  deviceSelector: r.device_selector,
  createdAt: r.created_at,
  deletedAt: r.deleted_at,
});

const INSERT = command<[string, string, string, string, string, string | null, string]>(
  `INSERT INTO applications (id, org_id, slug, update_workflow_name, default_channel, device_selector, created_at,
     deleted_at)
   VALUES (?, ?, ?, ?, ?, ?, ?, NULL)`,
);
const IN_ORG = query<ApplicationRow, [string, string]>(
  'SELECT * FROM applications WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
);
const IN_ORG_LOCKED = query<ApplicationRow, [string, string]>(
  (d) => `SELECT * FROM applications WHERE org_id = ? AND id = ? AND deleted_at IS NULL ${d.forUpdate}`,
);
const BY_ID = query<ApplicationRow, [string]>('SELECT * FROM applications WHERE id = ? AND deleted_at IS NULL');
const OF_ORG = query<ApplicationRow, [string]>(
  (d) => `SELECT * FROM applications WHERE org_id = ? AND deleted_at IS NULL ORDER BY created_at, ${d.insertionOrder}`,
);
const UPDATE = command<Record<string, unknown>>(
  `UPDATE applications SET update_workflow_name = COALESCE(@updateWorkflowName, update_workflow_name),
     default_channel = COALESCE(@defaultChannel, default_channel),
     notify_provider = CASE WHEN @notifySet = 1 THEN @notifyProvider ELSE notify_provider END,
     notify_team_id = CASE WHEN @notifySet = 1 THEN @notifyTeamId ELSE notify_team_id END,
     notify_channel_id = CASE WHEN @notifySet = 1 THEN @notifyChannelId ELSE notify_channel_id END
   WHERE org_id = @orgId AND id = @id AND deleted_at IS NULL`,
);
const CANCEL_PENDING = query<{ id: string }, [string, string, string]>(
  `UPDATE jobs SET status = 'cancelled', error_message = ?, finished_at = ?
   WHERE status = 'pending' AND id IN (SELECT active_job_id FROM device_bindings
     WHERE application_id = ? AND active_job_id IS NOT NULL)
   RETURNING id`,
);
const DELETE_BINDINGS = command<[string]>('DELETE FROM device_bindings WHERE application_id = ?');
const DELETE_RELEASES = command<[string]>('DELETE FROM releases WHERE application_id = ?');
const TOMBSTONE = command<[string, string]>('UPDATE applications SET deleted_at = ? WHERE id = ?');

/**
 * A slug is taken once among an organization's applications not deleted: its partial unique index
 * decides. A deletion locks the application's row (PostgreSQL), cancels the pending update jobs of
 * its bindings and removes its bindings and releases, in one transaction.
 */
export function createApplicationRepository(db: Database): ApplicationRepository {
  const inOrg = async (orgId: string, id: string) => {
    const row = await db.one(IN_ORG, [orgId, id]);
    return row ? toApplication(row) : null;
  };

  return {
    async insert(app) {
      try {
        await db.run(INSERT, [
          app.id,
          app.orgId,
          app.slug,
          app.updateWorkflowName,
          app.defaultChannel,
          app.deviceSelector,
          app.createdAt,
        ]);
        return 'created';
      } catch (error) {
        if (isUniqueViolation(error)) return 'duplicate_slug';
        throw error;
      }
    },
    findInOrg: inOrg,
    async findById(id) {
      const row = await db.one(BY_ID, [id]);
      return row ? toApplication(row) : null;
    },
    async listByOrg(orgId) {
      return (await db.all(OF_ORG, [orgId])).map(toApplication);
    },
    async update(orgId, id, patch) {
      await db.run(UPDATE, {
        updateWorkflowName: patch.updateWorkflowName ?? null,
        defaultChannel: patch.defaultChannel ?? null,
        notifySet: flag(patch.notify !== undefined),
        notifyProvider: patch.notify?.provider ?? null,
        notifyTeamId: patch.notify?.teamId ?? null,
        notifyChannelId: patch.notify?.channelId ?? null,
        orgId,
        id,
      });
      return inOrg(orgId, id);
    },
    delete(orgId, id, at, message) {
      return db.transaction(
        function* () {
          const row = yield* one(IN_ORG_LOCKED, [orgId, id]);
          if (!row) return null;
          const cancelled = yield* all(CANCEL_PENDING, [message, at, id]);
          yield* run(DELETE_BINDINGS, [id]);
          yield* run(DELETE_RELEASES, [id]);
          yield* run(TOMBSTONE, [at, id]);
          return { app: toApplication({ ...row, deleted_at: at }), cancelledJobIds: cancelled.map((r) => r.id) };
        },
        { immediate: true },
      );
    },
  };
}
