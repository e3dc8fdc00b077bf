import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { migrationLabel } from '../../coordinator/src/db/migration-plan.js';
import { loadPostgresMigrations, migratePostgres } from '../../coordinator/src/db/migrate.js';
import { createPool } from '../../coordinator/src/db/postgres/pool.js';
import { freshPostgresDatabase } from '../../coordinator/test/postgres/database.js';
import { coordinatorCli as cli, killLeftoverCoordinators } from '../helpers/coordinator-cli.js';
import { makeTempDir } from '../helpers/coordinator.js';

/** `DROVER_DATABASE_URL` / `--database-url` as the real `drover-coordinator` command takes them. */

afterEach(() => {
  expect(killLeftoverCoordinators(), 'child processes left running').toEqual([]);
});

async function run(args: string[], env: Record<string, string> = {}) {
  const c = cli(args, env);
  const code = await c.exited;
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

// Nothing listens there: the commands must stop before they connect anywhere.
const UNREACHABLE = 'postgres://drover:hunter2@127.0.0.1:9/drover';

describe('a PostgreSQL database URL', () => {
  it('is where start migrates, bootstraps and runs, and where bootstrap then finds the owner', async () => {
    const database = await freshPostgresDatabase();
    try {
      const env = {
        DROVER_DATABASE_URL: database.url,
        DROVER_BOOTSTRAP_EMAIL: 'owner@example.test',
        DROVER_BOOTSTRAP_PASSWORD: 'a long password',
      };
      const start = cli(['start', '--port', '0', '--data-dir', `${makeTempDir()}/data`, '--log-level', 'silent'], env);
      await start.waitFor(/Bootstrapped owner owner@example\.test/);
      start.child.kill('SIGTERM');
      expect(await start.exited).toBe(0);
      const again = await run(['bootstrap', '--data-dir', `${makeTempDir()}/data`], env);
      expect(again.code).toBe(1);
      expect(again.stderr).toBe('drover-coordinator: the database already has users; nothing bootstrapped\n');
    } finally {
      await database.drop();
    }
  });

  it('is migrated by migrate, which leaves the data directory alone, and is a no-op the second time', async () => {
    const database = await freshPostgresDatabase();
    try {
      const dataDir = `${makeTempDir()}/data`;
      const first = await run(['migrate', '--data-dir', dataDir, '--database-url', database.url]);
      expect(first.code, first.stderr).toBe(0);
      const migrations = loadPostgresMigrations();
      const version = `database at version ${migrations.at(-1)!.version}\n`;
      // A new database: no older coordinator can run on it, so nothing is said of breaking migrations.
      const applied = migrations.map((m) => `applied ${migrationLabel(m)}\n`);
      expect(first.stdout).toBe(`${applied.join('')}${version}`);
      const second = await run(['migrate'], { DROVER_DATABASE_URL: database.url });
      expect(second.stdout).toBe(version);
      expect(fs.existsSync(dataDir)).toBe(false);
    } finally {
      await database.drop();
    }
  });

  it('is run on by an older coordinator beside a migration of a newer one, unless that one is breaking', async () => {
    const database = await freshPostgresDatabase();
    const pool = createPool(database.url, { max: 1 });
    try {
      const env = { DROVER_DATABASE_URL: database.url };
      // Migrated, with what a newer drover-coordinator leaves: a migration this build does not know.
      await migratePostgres(pool);
      await pool.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', now())");
      const beside = 'the database has migration 9999_future of a newer drover-coordinator, not a breaking change';
      const start = cli(['start', '--port', '0', '--data-dir', `${makeTempDir()}/data`], env);
      await start.waitFor(/Drover coordinator listening on/);
      expect(start.stdout()).toContain(`"newerMigrations":["9999_future"],"msg":"${beside}: this one runs on it`);
      start.child.kill('SIGTERM');
      expect(await start.exited).toBe(0);

      await pool.query('UPDATE schema_migrations SET breaking = true WHERE version = 9999');
      const refused =
        `cannot migrate ${database.url.replace(/:[^:@/]*@/, ':****@')}: the database has migration 9999_future of a ` +
        'newer drover-coordinator, a breaking change this one does not know: upgrade this drover-coordinator\n';
      const [migrate, refusedStart] = await Promise.all([
        run(['migrate'], env),
        run(['start', '--port', '0', '--data-dir', `${makeTempDir()}/data`, '--log-level', 'silent'], env),
      ]);
      expect([migrate.code, migrate.stderr]).toEqual([1, `drover-coordinator: ${refused}`]);
      expect([refusedStart.code, refusedStart.stderr]).toEqual([1, `drover-coordinator: could not start: ${refused}`]);
    } finally {
      await pool.end();
      await database.drop();
    }
  });

  it('that cannot be reached fails migrate and start in one line naming it, and one that is not one is named; never the password', async () => {
    const [migrate, start, notOne] = await Promise.all([
      run(['migrate', '--database-url', UNREACHABLE]),
      run(['start', '--port', '0', '--data-dir', `${makeTempDir()}/data`, '--log-level', 'silent'], {
        DROVER_DATABASE_URL: UNREACHABLE,
      }),
      run(['start', '--data-dir', makeTempDir()], { DROVER_DATABASE_URL: 'mysql://root:hunter2@db/drover' }),
    ]);
    const cannot = 'cannot migrate postgres:\\/\\/drover:\\*\\*\\*\\*@127\\.0\\.0\\.1:9\\/drover: .*ECONNREFUSED.*';
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toMatch(new RegExp(`^drover-coordinator: ${cannot}\\n$`));
    expect(start.code).toBe(1);
    expect(start.stderr).toMatch(new RegExp(`^drover-coordinator: could not start: ${cannot}\\n$`));
    expect(notOne.code).toBe(2);
    expect(notOne.stderr).toContain('DROVER_DATABASE_URL: expected postgres://');
    for (const res of [migrate, start, notOne]) expect(res.stderr + res.stdout).not.toContain('hunter2');
  });
});
