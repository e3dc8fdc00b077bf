import type { StorageBackend, StorageBinding, StorageBindingRepository } from '../../domain/model/storage-bindings.js';
import { parseJsonColumn } from '../../util/json.js';
import type { Db } from '../database.js';

/** A `storage_bindings` row as SQLite answers it. */
export interface BindingRow {
  id: string;
  org_id: string;
  name: string;
  backend: StorageBackend;
  config: string;
  is_default: number;
  created_at: string;
}

export const toBinding = (r: BindingRow): StorageBinding => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  backend: r.backend,
  config: parseJsonColumn<Record<string, unknown>>(r.config, 'storage_bindings.config') ?? {},
  isDefault: r.is_default === 1,
  createdAt: r.created_at,
});

export function createStorageBindingRepository(db: Db): StorageBindingRepository {
  const insert = db.prepare(
    `INSERT INTO storage_bindings (id, org_id, name, backend, config, is_default, created_at)
     VALUES (@id, @orgId, @name, @backend, @config, @isDefault, @createdAt)`,
  );
  const nameTaken = db.prepare<[string, string], { id: string }>(
    'SELECT id FROM storage_bindings WHERE org_id = ? AND name = ? AND deleted_at IS NULL',
  );
  const insertIfNameFree = db.transaction((row: Record<string, unknown> & { orgId: string; name: string }) => {
    if (nameTaken.get(row.orgId, row.name)) return false;
    insert.run(row);
    return true;
  });
  const inOrg = db.prepare<[string, string], BindingRow>(
    'SELECT * FROM storage_bindings WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
  );
  const byOrg = db.prepare<[string], BindingRow>(
    'SELECT * FROM storage_bindings WHERE org_id = ? AND deleted_at IS NULL ORDER BY created_at, rowid',
  );
  const softDelete = db.prepare(
    'UPDATE storage_bindings SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
  );
  return {
    async insert(b) {
      insert.run({ ...b, config: JSON.stringify(b.config), isDefault: b.isDefault ? 1 : 0 });
    },
    async insertIfNameFree(b) {
      return insertIfNameFree({ ...b, config: JSON.stringify(b.config), isDefault: b.isDefault ? 1 : 0 });
    },
    async findInOrg(orgId, id) {
      const row = inOrg.get(orgId, id);
      return row ? toBinding(row) : null;
    },
    async listByOrg(orgId) {
      return byOrg.all(orgId).map(toBinding);
    },
    async softDelete(orgId, id, at) {
      return softDelete.run(at, orgId, id).changes === 1;
    },
  };
}
