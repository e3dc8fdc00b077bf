import type { StorageBackend, StorageBinding, StorageBindingRepository } from '../../domain/model/storage-bindings.js';
import { parseJsonColumn } from '../../util/json.js';
import { command, flag, isSet, json, one, query, run, values, type Database } from '../sql/index.js';
import { lockOrg } from './parent-locks.js';

/** A `storage_bindings` row. */
export interface BindingRow {
  id: string;
  org_id: string;
  name: string;
  backend: StorageBackend;
  config: string;
  is_default: number;
  created_at: string;
}

export const BINDING_COLUMNS = 'id, org_id, name, backend, config, is_default, created_at';

export const toBinding = (r: BindingRow): StorageBinding => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  backend: r.backend,
  config: parseJsonColumn<Record<string, unknown>>(r.config, 'storage_bindings.config') ?? {},
  isDefault: isSet(r.is_default),
  createdAt: r.created_at,
});

const INSERT = command(
  `INSERT INTO storage_bindings (id, org_id, name, backend, config, is_default, created_at)
   VALUES (?, ?, ?, ?, ?, ?, ?)`,
);
const NAME_TAKEN = query<{ id: string }, [string, string]>(
  'SELECT id FROM storage_bindings WHERE org_id = ? AND name = ? AND deleted_at IS NULL',
);
const IN_ORG = query<BindingRow, [string, string]>(
  `SELECT ${BINDING_COLUMNS} FROM storage_bindings WHERE org_id = ? AND id = ? AND deleted_at IS NULL`,
);
const BY_ORG = query<BindingRow, [string]>(
  (d) => `SELECT ${BINDING_COLUMNS} FROM storage_bindings WHERE org_id = ? AND deleted_at IS NULL
    ORDER BY created_at, ${d.insertionOrder}`,
);
/** The binding's row, locked (PostgreSQL) while its files are counted: a file's INSERT waits, or is waited for. */
const LOCK_LIVE = query<{ id: string }, [string, string]>(
  (d) => `SELECT id FROM storage_bindings WHERE org_id = ? AND id = ? AND deleted_at IS NULL ${d.forUpdate}`,
);
const UNDELETED_FILES = values<number, [string]>(
  `SELECT COUNT(*) FROM files WHERE binding_id = ? AND status <> 'deleted'`,
);
const SOFT_DELETE = command<[string, string, string]>(
  'UPDATE storage_bindings SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL',
);

const insertParams = (b: StorageBinding) => [
  b.id,
  b.orgId,
  b.name,
  b.backend,
  json(b.config),
  flag(b.isDefault),
  b.createdAt,
];

/** A name is checked and taken under the organization's row lock: two coordinators never both take it. */
export function createStorageBindingRepository(db: Database): StorageBindingRepository {
  return {
    async insert(b) {
      await db.run(INSERT, insertParams(b));
    },
    insertIfNameFree(b) {
      return db.transaction(function* () {
        yield* lockOrg(b.orgId);
        if (yield* one(NAME_TAKEN, [b.orgId, b.name])) return false;
        yield* run(INSERT, insertParams(b));
        return true;
      });
    },
    async findInOrg(orgId, id) {
      const row = await db.one(IN_ORG, [orgId, id]);
      return row ? toBinding(row) : null;
    },
    async listByOrg(orgId) {
      return (await db.all(BY_ORG, [orgId])).map(toBinding);
    },
    softDeleteIfEmpty(orgId, id, at) {
      return db.transaction(function* () {
        if (!(yield* one(LOCK_LIVE, [orgId, id]))) return { outcome: 'not_found' } as const;
        const files = Number((yield* one(UNDELETED_FILES, [id])) ?? 0);
        if (files > 0) return { outcome: 'holds_files', files } as const;
        yield* run(SOFT_DELETE, [at, orgId, id]);
        return { outcome: 'deleted' } as const;
      });
    },
  };
}
