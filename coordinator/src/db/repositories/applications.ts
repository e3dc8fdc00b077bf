import type { Application, ApplicationRepository, MaintenanceWindow } from '../../domain/model/applications.js';
import type { ChatProvider } from '../../domain/model/triggers.js';
import { all, command, flag, isUniqueViolation, json, one, query, run, type Database } from '../sql/index.js';

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
  /** JSON text (null: no window). */
  maintenance_window: string | null;
  /** JSON text: the release keys (null: none) and the rotations that changed them. */
  release_keys: string | null;
  release_key_rotations: string | null;
  created_at: string;
  deleted_at: string | null;
}

/** The `maintenance_window` column as the domain reads it. */
export const maintenanceWindowOf = (text: string | null): MaintenanceWindow | null =>
  text === null ? null : (JSON.parse(text) as MaintenanceWindow);

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
  maintenanceWindow: maintenanceWindowOf(r.maintenance_window),
  releaseKeys: r.release_keys === null ? null : (JSON.parse(r.release_keys) as string[]),
  releaseKeyRotations:
    r.release_key_rotations === null ? [] : (JSON.parse(r.release_key_rotations) as Application['releaseKeyRotations']),
  createdAt: r.created_at,
  deletedAt: r.deleted_at,
});

const INSERT = command<[string, string, string, string, string, string | null, string | null, string | null, string]>(
  `INSERT INTO applications (id, org_id, slug, update_workflow_name, default_channel, device_selector,
     maintenance_window, release_keys, created_at, deleted_at)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
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
/**
 * The fields of a patch that are given; `setWindow` / `notifySet` 1 sets the window / the chat
 * channel (null removes it); `keysSet` 1 sets the release keys, only if they are still `keysFrom`
 * (their JSON text, '' for none): two rotations at once cannot both apply.
 */
const UPDATE = command<Record<string, unknown>>(
  `UPDATE applications SET update_workflow_name = COALESCE(@workflow, update_workflow_name),
     default_channel = COALESCE(@channel, default_channel),
     maintenance_window = CASE WHEN @setWindow = 1 THEN @window ELSE maintenance_window END,
     notify_provider = CASE WHEN @notifySet = 1 THEN @notifyProvider ELSE notify_provider END,
     notify_team_id = CASE WHEN @notifySet = 1 THEN @notifyTeamId ELSE notify_team_id END,
     notify_channel_id = CASE WHEN @notifySet = 1 THEN @notifyChannelId ELSE notify_channel_id END,
     release_keys = CASE WHEN @keysSet = 1 THEN @keys ELSE release_keys END,
     release_key_rotations = CASE WHEN @keysSet = 1 THEN @rotations ELSE release_key_rotations END
   WHERE org_id = @orgId AND id = @id AND deleted_at IS NULL
     AND (@keysSet = 0 OR COALESCE(release_keys, '') = @keysFrom)`,
);
/**
 * The application's bindings, locked (PostgreSQL): an evaluation in flight holds them until it
 * commits, and the update jobs it issued are then seen by CANCEL_PENDING (a statement of its own).
 */
const LOCK_BINDINGS = query<{ id: string }, [string]>(
  (d) => `SELECT id FROM device_bindings WHERE application_id = ? ORDER BY id ${d.forUpdate}`,
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
 * decides. A deletion locks the application's row and its bindings (PostgreSQL: after the
 * evaluations that hold them), cancels the pending update jobs of its bindings and removes its
 * bindings and releases, in one transaction.
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
          json(app.maintenanceWindow),
          json(app.releaseKeys),
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
    update(orgId, id, patch) {
      const params = {
        workflow: patch.updateWorkflowName ?? null,
        channel: patch.defaultChannel ?? null,
        setWindow: flag(patch.maintenanceWindow !== undefined),
        window: json(patch.maintenanceWindow),
        notifySet: flag(patch.notify !== undefined),
        notifyProvider: patch.notify?.provider ?? null,
        notifyTeamId: patch.notify?.teamId ?? null,
        notifyChannelId: patch.notify?.channelId ?? null,
        keysSet: flag(patch.releaseKeys !== undefined),
        keysFrom: json(patch.releaseKeys?.from ?? null) ?? '',
        keys: json(patch.releaseKeys?.keys ?? null),
        rotations:
          patch.releaseKeys && patch.releaseKeys.rotations.length > 0 ? json(patch.releaseKeys.rotations) : null,
        orgId,
        id,
      };
      // Read in the transaction of the write: whether it was written is what it changed, not what
      // a later read finds (another change may come between).
      return db.transaction(function* () {
        const written = yield* run(UPDATE, params);
        const row = yield* one(IN_ORG, [orgId, id]);
        if (!row) return null;
        return { outcome: written > 0 ? 'updated' : 'keys_changed', app: toApplication(row) } as const;
      });
    },
    delete(orgId, id, at, message) {
      return db.transaction(
        function* () {
          const row = yield* one(IN_ORG_LOCKED, [orgId, id]);
          if (!row) return null;
          yield* all(LOCK_BINDINGS, [id]);
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
