import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { loadMigrations, migrate, type Migration } from '../../src/db/migrate.js';
import { applyingBreaking, runningBeside } from '../../src/db/migration-plan.js';

/** A migration of another build (a newer one, when its version is past this build's). */
const future = (version: number, name: string, sql = '', breaking = false): Migration => ({
  version,
  name,
  sql,
  breaking,
});

/**
 * A database migrated up to (not including) `version`, with an organization `o` and its agent `a`:
 * rows for an upgrade to find.
 */
function migratedBefore(version: number) {
  const db = openDatabase(':memory:');
  const all = loadMigrations();
  migrate(
    db,
    all.filter((m) => m.version < version),
  );
  const at = '2030-01-01T00:00:00.000Z';
  db.prepare("INSERT INTO orgs (id, name, created_at) VALUES ('o', 'o', ?)").run(at);
  db.prepare(
    `INSERT INTO agents (id, org_id, name, hostname, os, agent_version, public_key, status, enrolled_at, seq)
     VALUES ('a', 'o', 'a', 'h', 'linux', '1', 'k', 'connected', ?, 1)`,
  ).run(at);
  return { db, all, at };
}

describe('migrate', () => {
  it('applies every migration once and records its version', () => {
    const db = openDatabase(':memory:');
    const first = migrate(db);
    expect(first.applied.map((m) => m.version)).toEqual(loadMigrations().map((m) => m.version));
    expect(migrate(db).applied).toEqual([]);
    const rows = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all();
    expect(rows).toHaveLength(loadMigrations().length);
    db.close();
  });

  it('runs beside a migration of a newer build that is not breaking, and says so', () => {
    const db = openDatabase(':memory:');
    migrate(db, [...loadMigrations(), future(9999, 'future_column', 'ALTER TABLE orgs ADD COLUMN future TEXT')]);
    const older = migrate(db);
    expect(older.applied).toEqual([]);
    expect(older.newer).toEqual([{ version: 9999, name: 'future_column', breaking: false }]);
    expect(older.current).toBe(9999);
    expect(runningBeside(older.newer)).toBe(
      'the database has migration 9999_future_column of a newer drover-coordinator, not a breaking change: ' +
        'this one runs on it, and should be upgraded',
    );
    db.close();
  });

  it('refuses a database with a breaking migration of a newer build, naming it, before applying anything', () => {
    const db = openDatabase(':memory:');
    const all = loadMigrations();
    const last = all.at(-1)!;
    // The newer build's history, less this build's last migration: refused, that one is not applied either.
    migrate(db, [...all.slice(0, -1), future(9998, 'quiet'), future(9999, 'drop_old_column', '', true)]);
    expect(() => migrate(db)).toThrow(
      'the database has migration 9999_drop_old_column of a newer drover-coordinator, a breaking change ' +
        'this one does not know: upgrade this drover-coordinator',
    );
    expect(db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(last.version)).toBeUndefined();
    db.close();
  });

  it('records whether each migration is breaking, and marks one marked breaking after it was applied', () => {
    const db = openDatabase(':memory:');
    const breaking = () => db.prepare('SELECT version, breaking FROM schema_migrations WHERE version >= 9000').all();
    migrate(db, [future(9001, 'a'), future(9002, 'b', '', true)]);
    expect(breaking()).toEqual([
      { version: 9001, breaking: 0 },
      { version: 9002, breaking: 1 },
    ]);
    migrate(db, [future(9001, 'a', '', true), future(9002, 'b', '', true)]);
    expect(breaking()).toEqual([
      { version: 9001, breaking: 1 },
      { version: 9002, breaking: 1 },
    ]);
    db.close();
  });

  it('tells onApply of each migration before it is applied, and whether the database was new', () => {
    const db = openDatabase(':memory:');
    const seen: string[] = [];
    const onApply = (m: Migration, fromEmpty: boolean) => {
      const done = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version) !== undefined;
      seen.push(`${m.name} ${m.breaking ? 'breaking' : 'safe'}${fromEmpty ? ' new' : ''}${done ? ' already' : ''}`);
    };
    expect(migrate(db, [future(9001, 'a')], { onApply }).fromEmpty).toBe(true);
    const later = migrate(db, [future(9001, 'a'), future(9002, 'b', '', true)], { onApply });
    expect(later.fromEmpty).toBe(false);
    expect(seen).toEqual(['a safe new', 'b breaking']);
    expect(applyingBreaking(future(9002, 'b', '', true))).toBe(
      'applying 9002_b, a breaking change: coordinators of earlier versions cannot run on this database once it ' +
        'is applied; stop any still running on it (docs/scaling.md, "Upgrading several coordinators")',
    );
    db.close();
  });

  it('gives a migrations table made before the breaking column that column, its rows not breaking', () => {
    const db = openDatabase(':memory:');
    db.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
    );
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (9001, 'a', 'x')").run();
    const result = migrate(db, [future(9001, 'a'), future(9002, 'b', '', true)]);
    expect(result.applied.map((m) => m.name)).toEqual(['b']);
    expect(db.prepare('SELECT version, breaking FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: 9001, breaking: 0 },
      { version: 9002, breaking: 1 },
    ]);
    db.close();
  });

  it("reads a first line `--! breaking-change` as a migration's mark, and refuses any other `--!` line", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-migrations-'));
    fs.writeFileSync(path.join(dir, '0001_safe.sql'), '-- --! breaking-change, not on the first line\nSELECT 1;\n');
    fs.writeFileSync(path.join(dir, '0002_breaking.sql'), '--! breaking-change\nSELECT 1;\n');
    expect(loadMigrations(dir).map((m) => [m.name, m.breaking])).toEqual([
      ['safe', false],
      ['breaking', true],
    ]);
    fs.writeFileSync(path.join(dir, '0003_misspelt.sql'), '--! breaking_change\nSELECT 1;\n');
    expect(() => loadMigrations(dir)).toThrow(
      '0003_misspelt.sql: unknown marker "--! breaking_change" on its first line (the one marker is "--! breaking-change")',
    );
  });

  it('applies the pending migrations all or none: a failing one rolls back those before it in the run', () => {
    const db = openDatabase(':memory:');
    migrate(db, [future(1, 'first', 'CREATE TABLE f (x INTEGER);')]);
    const run = [
      future(1, 'first', 'CREATE TABLE f (x INTEGER);'),
      future(2, 'good', 'CREATE TABLE g (x INTEGER);'),
      future(3, 'broken', 'CREATE TABLE t (x INTEGER); INSERT INTO nope VALUES (1);'),
    ];
    expect(() => migrate(db, run)).toThrow(/nope/);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name IN ('g', 't')").all()).toEqual([]);
    expect(db.prepare('SELECT version FROM schema_migrations').pluck().all()).toEqual([1]);
    db.close();
  });

  it('leaves cron triggers made before migration 0024 without answer settings (async, no debug)', () => {
    const { db, all, at } = migratedBefore(24);
    const insert = db.prepare(
      `INSERT INTO triggers (id, org_id, name, type, agent_id, scope_type, workflow_name, response_mode,
         response_timeout_ms, allow_debug, cron_expression, created_at, updated_at)
       VALUES (?, 'o', ?, ?, 'a', 'workflow', 'w', 'sync', 5000, 1, ?, ?, ?)`,
    );
    insert.run('c', 'nightly', 'cron', '0 3 * * *', at, at);
    insert.run('w', 'hook', 'webhook', null, at, at);
    migrate(db, all);
    const answer = db.prepare(
      'SELECT response_mode AS mode, response_timeout_ms AS wait, allow_debug AS debug FROM triggers WHERE id = ?',
    );
    expect(answer.get('c')).toEqual({ mode: 'async', wait: 30000, debug: 0 });
    expect(answer.get('w')).toEqual({ mode: 'sync', wait: 5000, debug: 1 });
    db.close();
  });

  it('drops the NOT NULL of triggers.agent_id and jobs.agent_id in place (0026): rows kept, the file intact', () => {
    const { db, all, at } = migratedBefore(26);
    db.prepare(
      `INSERT INTO triggers (id, org_id, name, type, agent_id, scope_type, workflow_name, response_mode,
         response_timeout_ms, allow_debug, created_at, updated_at)
       VALUES ('t', 'o', 'hook', 'webhook', 'a', 'workflow', 'w', 'sync', 5000, 1, ?, ?)`,
    ).run(at, at);
    const notNull = db.prepare(`SELECT "notnull" FROM pragma_table_info(?) WHERE name = 'agent_id'`).pluck();
    expect([notNull.get('jobs'), notNull.get('triggers')]).toEqual([1, 1]);
    migrate(db, all);
    expect([notNull.get('jobs'), notNull.get('triggers')]).toEqual([0, 0]);
    expect(db.prepare('PRAGMA integrity_check').pluck().all()).toEqual(['ok']);
    expect(db.prepare("SELECT agent_id FROM triggers WHERE id = 't'").pluck().get()).toBe('a');
    db.prepare("UPDATE triggers SET agent_id = NULL, agent_selector = 'role=x' WHERE id = 't'").run();
    db.close();
  });

  it("indexes by target only the audit entries that have one (0041), and the target's listing still uses it", () => {
    const { db, all, at } = migratedBefore(41);
    const insert = db.prepare(
      `INSERT INTO audit_log (org_id, actor_type, actor_id, action, target_type, target_id, created_at)
       VALUES ('o', 'api_token', 'k', ?, ?, ?, ?)`,
    );
    insert.run('api_token.discover', null, null, at);
    insert.run('trigger.create', 'trigger', 't1', at);
    const partial = db.prepare("SELECT partial FROM pragma_index_list('audit_log') WHERE name = 'audit_log_target'");
    expect(partial.pluck().get()).toBe(0);
    migrate(db, all);
    expect(partial.pluck().get()).toBe(1);
    expect(db.prepare('PRAGMA integrity_check').pluck().all()).toEqual(['ok']);
    const plan = db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT * FROM audit_log WHERE target_id = ? AND org_id = ? AND id < ?
         ORDER BY id DESC LIMIT 10`,
      )
      .all('t1', 'o', Number.MAX_SAFE_INTEGER) as { detail: string }[];
    expect(plan.map((step) => step.detail).join('\n')).toContain('USING INDEX audit_log_target');
    db.close();
  });

  it('indexes by trigger only the jobs that have one (0043), and the queries by trigger still use it', () => {
    const { db, all, at } = migratedBefore(43);
    db.prepare(
      `INSERT INTO triggers (id, org_id, name, type, agent_id, scope_type, workflow_name, response_mode,
         response_timeout_ms, allow_debug, created_at, updated_at)
       VALUES ('t', 'o', 'hook', 'webhook', 'a', 'workflow', 'w', 'sync', 5000, 1, ?, ?)`,
    ).run(at, at);
    const insert = db.prepare(
      `INSERT INTO jobs (id, org_id, kind, trigger_id, agent_id, workflow_name, status, created_at, number)
       VALUES (?, 'o', ?, ?, 'a', 'w', 'pending', ?, ?)`,
    );
    insert.run('j1', 'trigger', 't', at, 1);
    insert.run('j2', 'update', null, at, 2);
    const partial = db.prepare("SELECT partial FROM pragma_index_list('jobs') WHERE name = 'jobs_org_trigger'");
    expect(partial.pluck().get()).toBe(0);
    migrate(db, all);
    expect(partial.pluck().get()).toBe(1);
    expect(db.prepare('PRAGMA integrity_check').pluck().all()).toEqual(['ok']);
    const plan = (sql: string, ...params: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[])
        .map((step) => step.detail)
        .join('\n');
    // The shapes of the jobs list of one trigger and of a cron trigger's previous scheduled run.
    expect(
      plan(
        `SELECT * FROM jobs WHERE trigger_id = ? AND org_id = ? AND kind = 'trigger' AND seq < ?
         ORDER BY seq DESC LIMIT 10`,
        't',
        'o',
        Number.MAX_SAFE_INTEGER,
      ),
    ).toContain('USING INDEX jobs_org_trigger');
    expect(
      plan(`SELECT status FROM jobs WHERE org_id = +? AND trigger_id = +? ORDER BY seq DESC LIMIT 1`, 'o', 't'),
    ).toContain('USING INDEX jobs_org_trigger');
    expect(db.prepare("SELECT id FROM jobs WHERE org_id = 'o' AND trigger_id = 't'").pluck().all()).toEqual(['j1']);
    db.close();
  });

  it('marks the passwords invitations chose and nobody changed since (0044)', () => {
    const { db, all, at } = migratedBefore(44);
    const user = db.prepare(
      'INSERT INTO users (id, email, password_hash, created_at, session_generation) VALUES (?, ?, ?, ?, ?)',
    );
    user.run('invited', 'Invited@example.test', 'hash', at, 0);
    user.run('changed', 'changed@example.test', 'hash', at, 1);
    user.run('sso', 'sso@example.test', '!sso', at, 0);
    user.run('own', 'own@example.test', 'hash', '2029-01-01T00:00:00.000Z', 0);
    const invitation = db.prepare(
      `INSERT INTO org_invitations (id, org_id, email, role, status, created_at, expires_at)
       VALUES (?, 'o', ?, 'member', 'pending', ?, ?)`,
    );
    invitation.run('i1', 'invited@example.test', at, at);
    invitation.run('i2', 'changed@example.test', at, at);
    invitation.run('i3', 'sso@example.test', at, at);
    invitation.run('i4', 'own@example.test', at, at);
    migrate(
      db,
      all.filter((m) => m.version <= 44),
    );
    expect(db.prepare('SELECT id FROM users WHERE password_by_inviter = 1').pluck().all()).toEqual(['invited']);
    // 0045: a password changed since is marked too (whoever knew the first one could change it).
    migrate(db, all);
    expect(db.prepare('SELECT id FROM users WHERE password_by_inviter = 1 ORDER BY id').pluck().all()).toEqual([
      'changed',
      'invited',
    ]);
    db.close();
  });

  it('marks the passwords of accounts an owner made by adding their email, before invitations (0047)', () => {
    const { db, all, at } = migratedBefore(47);
    const later = '2030-01-02T00:00:00.000Z';
    const user = db.prepare('INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)');
    const member = db.prepare("INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, 'member', ?)");
    // The owner who made organization o as their account was made (the bootstrap).
    user.run('founder', 'founder@example.test', 'hash', at);
    db.prepare("INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ('o', 'founder', 'owner', ?)").run(
      at,
    );
    // Made by an owner with the member, a day after the organization; its password changed since or not.
    user.run('added', 'added@example.test', 'hash', later);
    member.run('o', 'added', later);
    // Joined later, with an account made before: its password is its own.
    user.run('joined', 'joined@example.test', 'hash', at);
    member.run('o', 'joined', later);
    // Made by single sign-on with its membership: no password.
    user.run('sso', 'sso@example.test', '!sso', later);
    member.run('o', 'sso', later);
    migrate(db, all);
    expect(db.prepare('SELECT id FROM users WHERE password_by_inviter = 1').pluck().all()).toEqual(['added']);
    db.close();
  });

  it('revokes the pending invitations of inviters who are no owner of the organization any more (0053)', () => {
    const { db, all, at } = migratedBefore(53);
    const user = db.prepare('INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)');
    const member = db.prepare('INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)');
    for (const id of ['owner', 'demoted', 'left']) user.run(id, `${id}@example.test`, 'hash', at);
    member.run('o', 'owner', 'owner', at);
    member.run('o', 'demoted', 'operator', at);
    const invitation = db.prepare(
      `INSERT INTO org_invitations (id, org_id, email, role, status, created_by, created_at, expires_at)
       VALUES (?, 'o', ?, 'owner', ?, ?, ?, ?)`,
    );
    invitation.run('by-owner', 'a@example.test', 'pending', 'owner', at, at);
    invitation.run('by-demoted', 'b@example.test', 'pending', 'demoted', at, at);
    invitation.run('by-left', 'c@example.test', 'pending', 'left', at, at);
    invitation.run('accepted', 'd@example.test', 'accepted', 'left', at, at);
    migrate(db, all);
    const rows = db.prepare('SELECT id, status, ended_at IS NOT NULL AS ended FROM org_invitations ORDER BY id').all();
    expect(rows).toEqual([
      { id: 'accepted', status: 'accepted', ended: 0 },
      { id: 'by-demoted', status: 'revoked', ended: 1 },
      { id: 'by-left', status: 'revoked', ended: 1 },
      { id: 'by-owner', status: 'pending', ended: 0 },
    ]);
    db.close();
  });

  it('revokes the open enrollment tokens of makers who may enroll no agent any more (0054)', () => {
    const { db, all, at } = migratedBefore(54);
    const user = db.prepare('INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)');
    const member = db.prepare('INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)');
    for (const id of ['member', 'viewer', 'left']) user.run(id, `${id}@example.test`, 'hash', at);
    member.run('o', 'member', 'member', at);
    member.run('o', 'viewer', 'viewer', at);
    const token = db.prepare(
      `INSERT INTO enrollment_tokens (id, org_id, token_hash, created_by, expires_at, used_at, created_at)
       VALUES (?, 'o', ?, ?, ?, ?, ?)`,
    );
    const open = '2100-01-01T00:00:00.000Z';
    token.run('by-member', 'h1', 'member', open, null, at);
    token.run('by-viewer', 'h2', 'viewer', open, null, at);
    token.run('by-left', 'h3', 'left', open, null, at);
    token.run('by-left-used', 'h4', 'left', open, at, at);
    token.run('by-left-expired', 'h5', 'left', '2000-01-01T00:00:00.000Z', null, at);
    migrate(db, all);
    const rows = db.prepare('SELECT id, revoked_at IS NOT NULL AS revoked FROM enrollment_tokens ORDER BY id').all();
    expect(rows).toEqual([
      { id: 'by-left', revoked: 1 },
      { id: 'by-left-expired', revoked: 0 },
      { id: 'by-left-used', revoked: 0 },
      { id: 'by-member', revoked: 0 },
      { id: 'by-viewer', revoked: 1 },
    ]);
    db.close();
  });

  it('marks the memberships the role map added, found by their member.add audit entries (0055)', () => {
    const { db, all, at } = migratedBefore(55);
    const user = db.prepare('INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)');
    const member = db.prepare('INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)');
    const audit = db.prepare(
      `INSERT INTO audit_log (org_id, actor_type, actor_id, action, target_type, target_id, metadata, created_at)
       VALUES ('o', 'user', ?, ?, 'user', ?, ?, ?)`,
    );
    const later = '2030-01-02T00:00:00.000Z';
    for (const id of ['mapped', 'invited', 'rejoined']) user.run(id, `${id}@example.test`, 'hash', at);
    member.run('o', 'mapped', 'operator', at);
    member.run('o', 'invited', 'member', at);
    member.run('o', 'rejoined', 'viewer', later); // the map added them once; removed; invited back since
    audit.run('mapped', 'member.add', 'mapped', JSON.stringify({ via: 'sso', group: 'ops', role: 'operator' }), at);
    audit.run('invited', 'member.update', 'invited', JSON.stringify({ via: 'sso', group: 'ops', to: 'member' }), at);
    audit.run('rejoined', 'member.add', 'rejoined', JSON.stringify({ via: 'sso', group: 'ops', role: 'owner' }), at);
    migrate(db, all);
    const rows = db.prepare('SELECT user_id, sso_group, role_before_sso FROM memberships ORDER BY user_id').all();
    expect(rows).toEqual([
      { user_id: 'invited', sso_group: null, role_before_sso: null },
      { user_id: 'mapped', sso_group: 'ops', role_before_sso: null },
      { user_id: 'rejoined', sso_group: null, role_before_sso: null },
    ]);
    db.close();
  });

  it('opens file databases in WAL mode with foreign keys on', () => {
    const db = openDatabase(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'drover-db-')), 'x.sqlite'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    db.close();
  });
});
