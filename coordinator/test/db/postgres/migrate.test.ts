import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/db/database.js';
import {
  loadMigrations,
  loadPostgresMigrations,
  migrate,
  migratePostgres,
  type Migration,
} from '../../../src/db/migrate.js';
import { migrationLabel } from '../../../src/db/migration-plan.js';
import { createPool, type PgPool } from '../../../src/db/postgres/pool.js';
import { freshPostgresDatabase, type TestDatabase } from '../../postgres/database.js';

/**
 * PostgreSQL's migrations, and the rule that keeps the two schemas one: the same tables with the
 * same columns (beyond the few PostgreSQL keeps in place of SQLite's rowid), and every SQLite
 * migration after the one PostgreSQL's 0001 stands for has a PostgreSQL twin of the same name.
 */

/** The last SQLite migration that PostgreSQL's `0001_schema` stands for. */
const FOLDED_INTO_0001 = 19;
/** PostgreSQL only: identity columns in place of SQLite's implicit rowid, and the job number counters. */
const POSTGRES_ONLY_COLUMNS = [
  'api_tokens.seq',
  'applications.seq',
  'device_bindings.seq',
  'enrollment_tokens.seq',
  'files.seq',
  'storage_bindings.seq',
  'triggers.seq',
];
const POSTGRES_ONLY_TABLES = ['job_number_counters'];

/** A migration of another build (a newer one, when its version is past this build's). */
const future = (version: number, name: string, sql = '', breaking = false): Migration => ({
  version,
  name,
  sql,
  breaking,
});

let database: TestDatabase;
let pool: PgPool;
const fresh: TestDatabase[] = [];
beforeAll(async () => {
  database = await freshPostgresDatabase();
  pool = createPool(database.url);
});
afterAll(async () => {
  await pool.end();
  for (const d of [database, ...fresh]) await d.drop();
});

async function emptyPool(): Promise<PgPool> {
  const d = await freshPostgresDatabase();
  fresh.push(d);
  return createPool(d.url);
}

describe('PostgreSQL migrations', () => {
  it('applies every migration once and records its version', async () => {
    const first = await migratePostgres(pool);
    expect(first.applied.map((m) => m.version)).toEqual(loadPostgresMigrations().map((m) => m.version));
    expect((await migratePostgres(pool)).applied).toEqual([]);
    const { rows } = await pool.query('SELECT version, name FROM schema_migrations ORDER BY version');
    expect(rows).toEqual(loadPostgresMigrations().map((m) => ({ version: m.version, name: m.name })));
  });

  it('lets several coordinators migrate at once: one applies, the others find it done', async () => {
    const other = await emptyPool();
    const pools = [other, createPool(fresh.at(-1)!.url), createPool(fresh.at(-1)!.url)];
    try {
      const results = await Promise.all(pools.map((p) => migratePostgres(p)));
      expect(results.map((r) => r.applied.length).sort()).toEqual([0, 0, loadPostgresMigrations().length]);
    } finally {
      for (const p of pools) await p.end();
    }
  });

  it('runs beside a migration of a newer build that is not breaking', async () => {
    const p = await emptyPool();
    try {
      const newer = future(9999, 'future_column', 'ALTER TABLE orgs ADD COLUMN future text');
      await migratePostgres(p, [...loadPostgresMigrations(), newer]);
      const older = await migratePostgres(p);
      expect(older).toEqual({
        applied: [],
        newer: [{ version: 9999, name: 'future_column', breaking: false }],
        current: 9999,
        fromEmpty: false,
      });
    } finally {
      await p.end();
    }
  });

  it('refuses a database with a breaking migration of a newer build, naming it, before applying anything', async () => {
    const p = await emptyPool();
    try {
      const all = loadPostgresMigrations();
      await migratePostgres(p, [...all.slice(0, -1), future(9998, 'quiet'), future(9999, 'drop_old_column', '', true)]);
      await expect(migratePostgres(p)).rejects.toThrow(
        'the database has migration 9999_drop_old_column of a newer drover-coordinator, a breaking change ' +
          'this one does not know: upgrade this drover-coordinator',
      );
      const last = await p.query('SELECT 1 FROM schema_migrations WHERE version = $1', [all.at(-1)!.version]);
      expect(last.rows).toEqual([]);
      // The lock was given back: the newer build still migrates.
      expect(
        (await migratePostgres(p, [...all, future(9998, 'quiet'), future(9999, 'drop_old_column', '', true)])).applied,
      ).toHaveLength(1);
    } finally {
      await p.end();
    }
  });

  it('records whether each migration is breaking, and marks one marked breaking after it was applied', async () => {
    const p = await emptyPool();
    try {
      const breaking = async () =>
        (await p.query('SELECT version, breaking FROM schema_migrations ORDER BY version')).rows;
      const seen: string[] = [];
      const onApply = (m: Migration, fromEmpty: boolean) =>
        seen.push(`${m.name} ${m.breaking ? 'breaking' : 'safe'}${fromEmpty ? ' new' : ''}`);
      await migratePostgres(p, [future(9001, 'a')], { onApply });
      expect((await migratePostgres(p, [future(9001, 'a'), future(9002, 'b', '', true)], { onApply })).fromEmpty).toBe(
        false,
      );
      expect(seen).toEqual(['a safe new', 'b breaking']);
      expect(await breaking()).toEqual([
        { version: 9001, breaking: false },
        { version: 9002, breaking: true },
      ]);
      await migratePostgres(p, [future(9001, 'a', '', true), future(9002, 'b', '', true)]);
      expect(await breaking()).toEqual([
        { version: 9001, breaking: true },
        { version: 9002, breaking: true },
      ]);
    } finally {
      await p.end();
    }
  });

  it('gives a migrations table made before the breaking column that column, its rows not breaking', async () => {
    const p = await emptyPool();
    try {
      await p.query(
        'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)',
      );
      await p.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (9001, 'a', now())");
      const result = await migratePostgres(p, [future(9001, 'a'), future(9002, 'b', '', true)]);
      expect(result.applied.map((m) => m.name)).toEqual(['b']);
      expect((await p.query('SELECT version, breaking FROM schema_migrations ORDER BY version')).rows).toEqual([
        { version: 9001, breaking: false },
        { version: 9002, breaking: true },
      ]);
    } finally {
      await p.end();
    }
  });

  it('applies the pending migrations all or none: a failing one rolls back those before it in the run', async () => {
    const p = await emptyPool();
    try {
      const first = future(1, 'first', 'CREATE TABLE f (x integer);');
      await migratePostgres(p, [first]);
      const broken = [
        first,
        future(2, 'good', 'CREATE TABLE g (x integer);'),
        future(3, 'broken', 'CREATE TABLE t (x integer); INSERT INTO nope VALUES (1);'),
      ];
      await expect(migratePostgres(p, broken)).rejects.toThrow(/nope/);
      expect((await p.query("SELECT to_regclass('g') AS g, to_regclass('t') AS t")).rows).toEqual([
        { g: null, t: null },
      ]);
      expect((await p.query('SELECT version FROM schema_migrations')).rows).toEqual([{ version: 1 }]);
      // The lock was given back: the next run proceeds.
      expect((await migratePostgres(p, [])).applied).toEqual([]);
    } finally {
      await p.end();
    }
  });
});

describe('0030_email_ascii_case', () => {
  const before = loadPostgresMigrations().filter((m) => m.version < 30);
  const AT = '2030-01-01T00:00:00Z';
  const insertUsers = (p: PgPool, ...emails: string[]) =>
    p.query(
      `INSERT INTO users (id, email, password_hash, created_at)
       SELECT email, email, 'h', '${AT}' FROM unnest($1::text[]) AS e(email)`,
      [emails],
    );
  const migratedBefore = async (collation: 'en-US' | 'tr-TR') => {
    const d = await freshPostgresDatabase({ collation });
    fresh.push(d);
    const p = createPool(d.url);
    await migratePostgres(p, before);
    await p.query(`INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', '${AT}')`);
    return p;
  };
  const invite = (p: PgPool, id: string, email: string) =>
    p.query(
      `INSERT INTO org_invitations (id, org_id, email, role, status, created_at, expires_at)
       VALUES ($1, 'o', $2, 'member', 'pending', '${AT}', '${AT}')`,
      [id, email],
    );

  it('keeps the rows of an en-US database, then tells ÉMILE from émile but not Ivan from ivan', async () => {
    const p = await migratedBefore('en-US');
    try {
      await insertUsers(p, 'ÉMILE@x.test', 'Ivan@x.test');
      await expect(insertUsers(p, 'émile@x.test')).rejects.toThrow(/users_email/);
      await invite(p, 'i1', 'Örjan@x.test');
      await migratePostgres(p);
      await insertUsers(p, 'émile@x.test');
      await expect(insertUsers(p, 'ivan@X.test')).rejects.toThrow(/users_email/);
      await invite(p, 'i2', 'örjan@x.test');
      await expect(invite(p, 'i3', 'ÖRJAN@x.test')).rejects.toThrow(/org_invitations_pending/);
      const { rows } = await p.query('SELECT email FROM users ORDER BY email COLLATE "C"');
      expect(rows.map((r) => r.email)).toEqual(['Ivan@x.test', 'ÉMILE@x.test', 'émile@x.test']);
    } finally {
      await p.end();
    }
  });

  it('names the emails that ASCII case alone tells apart (a Turkish database: I is not i) and applies nothing', async () => {
    const p = await migratedBefore('tr-TR');
    try {
      // lower('IVAN') is 'ıvan' here: two accounts, and two pending invitations, under the old indexes.
      await insertUsers(p, 'IVAN@x.test', 'ivan@x.test', 'other@x.test');
      await invite(p, 'i1', 'INCI@x.test');
      await invite(p, 'i2', 'inci@x.test');
      await expect(migratePostgres(p)).rejects.toThrow(
        'emails that differ only in the case of ASCII letters are one account from this version on: ' +
          'users IVAN@x.test, ivan@x.test; pending invitations of organization o INCI@x.test, inci@x.test',
      );
      const { rows } = await p.query('SELECT max(version) AS version FROM schema_migrations');
      expect(rows).toEqual([{ version: 29 }]);
      // Settled by the operator, it applies.
      await p.query("DELETE FROM users WHERE email = 'IVAN@x.test'");
      await p.query("DELETE FROM org_invitations WHERE id = 'i1'");
      const rest = loadPostgresMigrations().filter((m) => m.version >= 30);
      expect((await migratePostgres(p)).applied.map((m) => m.version)).toEqual(rest.map((m) => m.version));
    } finally {
      await p.end();
    }
  });
});

describe('0035_enrollment_token_revocation', () => {
  it('numbers the tokens there are in the order they were made, spent ones too', async () => {
    const p = await emptyPool();
    try {
      await migratePostgres(
        p,
        loadPostgresMigrations().filter((m) => m.version < 35),
      );
      await p.query("INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', '2030-01-01T00:00:00Z')");
      for (const [i, name] of ['first', 'second', 'third', 'fourth'].entries()) {
        await p.query(
          `INSERT INTO enrollment_tokens (id, org_id, name, token_hash, expires_at, created_at)
           VALUES ($1, 'o', $1, $1, '2030-02-01T00:00:00Z', $2)`,
          [name, `2030-01-01T00:00:0${i}Z`],
        );
      }
      // Spending a token writes a new version of its row, elsewhere in the table.
      await p.query(
        "UPDATE enrollment_tokens SET used_at = '2030-01-02T00:00:00Z', used_by_agent_id = 'a' WHERE id = 'first'",
      );
      await migratePostgres(p);
      // One made after the upgrade is the newest.
      await p.query(
        `INSERT INTO enrollment_tokens (id, org_id, name, token_hash, expires_at, created_at)
         VALUES ('fifth', 'o', 'fifth', 'fifth', '2030-02-01T00:00:00Z', '2030-01-03T00:00:00Z')`,
      );
      const { rows } = await p.query('SELECT id FROM enrollment_tokens ORDER BY seq DESC');
      expect(rows.map((r) => r.id)).toEqual(['fifth', 'fourth', 'third', 'second', 'first']);
    } finally {
      await p.end();
    }
  });
});

/**
 * A database migrated up to `version` (excluded) holding organization `o` and a user per key of
 * `users` (`<id>@example.test`), a member of `o` in the role given (null: not a member).
 */
async function orgBefore(version: number, users: Record<string, string | null>): Promise<{ p: PgPool; at: string }> {
  const p = await emptyPool();
  await migratePostgres(
    p,
    loadPostgresMigrations().filter((m) => m.version < version),
  );
  const at = '2030-01-01T00:00:00Z';
  await p.query("INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', $1)", [at]);
  for (const [id, role] of Object.entries(users)) {
    await p.query('INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, $2, $3, $4)', [
      id,
      `${id}@example.test`,
      'hash',
      at,
    ]);
    if (role !== null) {
      await p.query("INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ('o', $1, $2, $3)", [
        id,
        role,
        at,
      ]);
    }
  }
  return { p, at };
}

describe('0036_invitations_of_former_owners', () => {
  it('revokes the pending invitations of inviters who are no owner of the organization any more', async () => {
    const { p, at } = await orgBefore(36, { owner: 'owner', demoted: 'operator', left: null });
    try {
      for (const [id, email, status, by] of [
        ['by-owner', 'a@example.test', 'pending', 'owner'],
        ['by-demoted', 'b@example.test', 'pending', 'demoted'],
        ['by-left', 'c@example.test', 'pending', 'left'],
        ['accepted', 'd@example.test', 'accepted', 'left'],
      ]) {
        await p.query(
          `INSERT INTO org_invitations (id, org_id, email, role, status, created_by, created_at, expires_at)
           VALUES ($1, 'o', $2, 'owner', $3, $4, $5, $5)`,
          [id, email, status, by, at],
        );
      }
      await migratePostgres(p);
      const { rows } = await p.query(
        'SELECT id, status, ended_at IS NOT NULL AS ended FROM org_invitations ORDER BY id',
      );
      expect(rows).toEqual([
        { id: 'accepted', status: 'accepted', ended: false },
        { id: 'by-demoted', status: 'revoked', ended: true },
        { id: 'by-left', status: 'revoked', ended: true },
        { id: 'by-owner', status: 'pending', ended: false },
      ]);
    } finally {
      await p.end();
    }
  });
});

describe('the two schemas', () => {
  it('have the same tables and columns', async () => {
    await migratePostgres(pool);
    const sqlite = openDatabase(':memory:');
    migrate(sqlite);
    const sqliteColumns = (
      sqlite
        .prepare(
          `SELECT m.name || '.' || c.name AS col FROM sqlite_master m, pragma_table_info(m.name) c
           WHERE m.type = 'table' AND m.name <> 'schema_migrations'`,
        )
        .all() as { col: string }[]
    )
      .map((r) => r.col)
      .sort();
    sqlite.close();
    const { rows } = await pool.query<{ col: string }>(
      `SELECT table_name || '.' || column_name AS col FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name <> 'schema_migrations'`,
    );
    const postgresColumns = rows
      .map((r) => r.col)
      .filter((c) => !POSTGRES_ONLY_COLUMNS.includes(c) && !POSTGRES_ONLY_TABLES.includes(c.split('.')[0]!))
      .sort();
    expect(postgresColumns).toEqual(sqliteColumns);
  });

  it('change together: each SQLite migration after 0019 has a PostgreSQL migration of the same name', () => {
    const postgres = new Set(loadPostgresMigrations().map((m) => m.name));
    const missing = loadMigrations()
      .filter((m) => m.version > FOLDED_INTO_0001)
      .filter((m) => !postgres.has(m.name))
      .map(migrationLabel);
    expect(missing, 'SQLite migrations without a PostgreSQL twin (docs/architecture.md, "Two databases")').toEqual([]);
  });

  it('are breaking together: a migration and its twin both carry `--! breaking-change`, or neither', () => {
    const postgres = new Map(loadPostgresMigrations().map((m) => [m.name, m.breaking]));
    const apart = loadMigrations()
      .filter((m) => postgres.has(m.name) && postgres.get(m.name) !== m.breaking)
      .map(migrationLabel);
    expect(apart, 'twins marked differently (docs/scaling.md, "Breaking migrations")').toEqual([]);
  });
});

describe('0037_enrollment_tokens_of_former_makers', () => {
  it('revokes the open enrollment tokens of makers who may enroll no agent any more', async () => {
    const { p, at } = await orgBefore(37, { member: 'member', viewer: 'viewer', left: null });
    try {
      const open = '2100-01-01T00:00:00Z';
      for (const [id, by, expires, used] of [
        ['by-member', 'member', open, null],
        ['by-viewer', 'viewer', open, null],
        ['by-left', 'left', open, null],
        ['by-left-used', 'left', open, at],
        ['by-left-expired', 'left', '2000-01-01T00:00:00Z', null],
      ]) {
        await p.query(
          `INSERT INTO enrollment_tokens (id, org_id, token_hash, created_by, expires_at, used_at, created_at)
           VALUES ($1, 'o', $1, $2, $3, $4, $5)`,
          [id, by, expires, used, at],
        );
      }
      await migratePostgres(p);
      const { rows } = await p.query('SELECT id, revoked_at IS NOT NULL AS revoked FROM enrollment_tokens ORDER BY id');
      expect(rows).toEqual([
        { id: 'by-left', revoked: true },
        { id: 'by-left-expired', revoked: false },
        { id: 'by-left-used', revoked: false },
        { id: 'by-member', revoked: false },
        { id: 'by-viewer', revoked: true },
      ]);
    } finally {
      await p.end();
    }
  });
});

describe('0038_memberships_of_the_role_map', () => {
  it('marks the memberships the role map added, found by their member.add audit entries', async () => {
    const { p, at } = await orgBefore(38, { mapped: 'operator', invited: 'member', rejoined: null });
    try {
      const later = '2030-01-02T00:00:00Z';
      // The map added `rejoined` once; removed, they were invited back since.
      await p.query(
        "INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ('o', 'rejoined', 'viewer', $1)",
        [later],
      );
      for (const [id, action, metadata] of [
        ['mapped', 'member.add', { via: 'sso', group: 'ops', role: 'operator' }],
        ['invited', 'member.update', { via: 'sso', group: 'ops', to: 'member' }],
        ['rejoined', 'member.add', { via: 'sso', group: 'ops', role: 'owner' }],
      ] as const) {
        await p.query(
          `INSERT INTO audit_log (org_id, actor_type, actor_id, action, target_type, target_id, metadata, created_at)
           VALUES ('o', 'user', $1, $2, 'user', $1, $3, $4)`,
          [id, action, JSON.stringify(metadata), at],
        );
      }
      await migratePostgres(p);
      const { rows } = await p.query('SELECT user_id, sso_group, role_before_sso FROM memberships ORDER BY user_id');
      expect(rows).toEqual([
        { user_id: 'invited', sso_group: null, role_before_sso: null },
        { user_id: 'mapped', sso_group: 'ops', role_before_sso: null },
        { user_id: 'rejoined', sso_group: null, role_before_sso: null },
      ]);
    } finally {
      await p.end();
    }
  });
});
