import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
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
  it('is refused by start and bootstrap in one line, creating nothing and never echoing the password', async () => {
    const dataDir = `${makeTempDir()}/data`;
    const [start, bootstrap] = await Promise.all([
      run(['start', '--port', '0', '--data-dir', dataDir, '--database-url', UNREACHABLE]),
      run(['bootstrap', '--data-dir', dataDir], {
        DROVER_DATABASE_URL: UNREACHABLE,
        DROVER_BOOTSTRAP_EMAIL: 'owner@example.test',
        DROVER_BOOTSTRAP_PASSWORD: 'a long password',
      }),
    ]);
    for (const [res, command] of [
      [start, 'start'],
      [bootstrap, 'bootstrap'],
    ] as const) {
      expect(res.code).toBe(2);
      expect(res.stderr).toBe(
        `drover-coordinator: PostgreSQL is not usable yet in this version: \`${command}\` runs on SQLite only (unset DROVER_DATABASE_URL and --database-url)\n`,
      );
      expect(res.stdout).toBe('');
    }
    expect(fs.existsSync(dataDir)).toBe(false);
  });

  it('is migrated by migrate, which leaves the data directory alone, and is a no-op the second time', async () => {
    const database = await freshPostgresDatabase();
    try {
      const dataDir = `${makeTempDir()}/data`;
      const first = await run(['migrate', '--data-dir', dataDir, '--database-url', database.url]);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toBe('applied 0001_schema\ndatabase at version 1\n');
      const second = await run(['migrate'], { DROVER_DATABASE_URL: database.url });
      expect(second.stdout).toBe('database at version 1\n');
      expect(fs.existsSync(dataDir)).toBe(false);
    } finally {
      await database.drop();
    }
  });

  it('that cannot be reached fails migrate in one line naming it, and one that is not one is named; never the password', async () => {
    const [unreachable, notOne] = await Promise.all([
      run(['migrate', '--database-url', UNREACHABLE]),
      run(['start', '--data-dir', makeTempDir()], { DROVER_DATABASE_URL: 'mysql://root:hunter2@db/drover' }),
    ]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(
      /^drover-coordinator: cannot migrate postgres:\/\/drover:\*\*\*\*@127\.0\.0\.1:9\/drover: .*ECONNREFUSED.*\n$/,
    );
    expect(notOne.code).toBe(2);
    expect(notOne.stderr).toContain('DROVER_DATABASE_URL: expected postgres://');
    expect(unreachable.stderr + notOne.stderr).not.toContain('hunter2');
  });
});
