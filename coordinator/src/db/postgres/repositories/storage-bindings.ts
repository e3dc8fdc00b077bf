import type {
  StorageBackend,
  StorageBinding,
  StorageBindingRepository,
} from '../../../domain/model/storage-bindings.js';
import type { PgPool, Queryable } from '../pool.js';
import { all, json, one, run } from '../rows.js';
import { inTransaction } from '../transaction.js';

/** A `storage_bindings` row as PostgreSQL answers it. */
export interface BindingRow {
  id: string;
  org_id: string;
  name: string;
  backend: StorageBackend;
  config: Record<string, unknown> | null;
  is_default: boolean;
  created_at: string;
}

export const BINDING_COLUMNS = 'id, org_id, name, backend, config, is_default, created_at';

export const toBinding = (r: BindingRow): StorageBinding => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  backend: r.backend,
  config: r.config ?? {},
  isDefault: r.is_default,
  createdAt: r.created_at,
});

const insert = (db: Queryable, b: StorageBinding) =>
  run(
    db,
    `INSERT INTO storage_bindings (id, org_id, name, backend, config, is_default, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [b.id, b.orgId, b.name, b.backend, json(b.config), b.isDefault, b.createdAt],
  );

/** A name is checked and taken under the organization's row lock: two coordinators never both take it. */
export function createStorageBindingRepository(pool: PgPool): StorageBindingRepository {
  return {
    async insert(b) {
      await insert(pool, b);
    },
    insertIfNameFree(b) {
      return inTransaction(pool, async (tx) => {
        await run(tx, 'SELECT 1 FROM orgs WHERE id = $1 FOR NO KEY UPDATE', [b.orgId]);
        const taken = await one(
          tx,
          'SELECT id FROM storage_bindings WHERE org_id = $1 AND name = $2 AND deleted_at IS NULL',
          [b.orgId, b.name],
        );
        if (taken) return false;
        await insert(tx, b);
        return true;
      });
    },
    async findInOrg(orgId, id) {
      const row = await one<BindingRow>(
        pool,
        'SELECT * FROM storage_bindings WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL',
        [orgId, id],
      );
      return row ? toBinding(row) : null;
    },
    async listByOrg(orgId) {
      const rows = await all<BindingRow>(
        pool,
        'SELECT * FROM storage_bindings WHERE org_id = $1 AND deleted_at IS NULL ORDER BY created_at, seq',
        [orgId],
      );
      return rows.map(toBinding);
    },
    async softDelete(orgId, id, at) {
      const changed = await run(
        pool,
        'UPDATE storage_bindings SET deleted_at = $1 WHERE org_id = $2 AND id = $3 AND deleted_at IS NULL',
        [at, orgId, id],
      );
      return changed === 1;
    },
  };
}
