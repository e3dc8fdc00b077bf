import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The PostgreSQL pass of the suite (`pnpm test:postgres`, run by scripts/test.sh after the main
 * pass, which runs everything on SQLite): the end-to-end files (test/e2e) and the cron scheduler's
 * real coordinators again, each coordinator on a PostgreSQL database of its own on the run's
 * server (`DROVER_TEST_DATABASE=postgres`: test/helpers/coordinator.ts,
 * coordinator/test/domain/cron/harness.ts). Tests reach past the API through `t.sql`
 * (coordinator/test/db/test-sql.ts), alike on both databases. The unit tests of the agent, the
 * command line and `shared`, and the coordinator's own, touch no coordinator's database (the
 * repositories' contract suite runs every case on both databases in the main pass already). The
 * browser tests (test/browser) run in the main pass only: they prove what the dashboard shows and
 * sends, through the same API whose answers on PostgreSQL the end-to-end files prove here, and in
 * this pass they took a third of its time.
 */
export const POSTGRES_PASS = ['test/e2e/**/*.test.ts', 'coordinator/test/domain/cron/**/*.test.ts'];

/**
 * Files whose database is their own choice, not the pass's: run again here they would repeat the
 * main pass exactly.
 */
export const SAME_ON_BOTH_PASSES = [
  // No database at all: the commands on an old Node.js, the packages' `bin` entries.
  'test/e2e/old-node.test.ts',
  'test/e2e/package-bins.test.ts',
  // `drover-coordinator` child processes on the SQLite file of their data directory: the command's
  // exit codes, banner, signals and data directory; the quick start of the README.
  'test/e2e/cli.test.ts',
  'test/e2e/quickstart.test.ts',
  // The Debian packages: the coordinator they carry starts on the SQLite file of a new data directory.
  'test/e2e/packages.test.ts',
  // On PostgreSQL in both passes, with databases they make themselves.
  'test/e2e/cluster.test.ts',
  'test/e2e/cluster-events.test.ts',
  'test/e2e/fleet-cluster.test.ts',
  'test/e2e/database-url.test.ts',
  'test/e2e/postgres-run.test.ts',
  'test/e2e/ota-rollout-yank-race.test.ts',
  // From a coordinator on SQLite to PostgreSQL, by design.
  'test/e2e/copy-data.test.ts',
  // The systemd units, read as text.
  'test/e2e/agent-package-unit.test.ts',
  // The OpenAPI document, made from the routes' schemas whatever the database (6.6 s of this pass).
  'test/e2e/openapi.test.ts',
];

/**
 * Files whose rules live outside the database: what a client does with the coordinator's answers
 * (the `drover` command, the agent daemon and its binary, a proxy or a flaky link in between), what
 * the HTTP layer does before any route reads the database (request timeouts, trusted proxies), and
 * the sign-in and enrollment throttles, which each coordinator keeps in its memory (the audit
 * entries a lockout writes are written as any audit entry, proven here by management-audit). On
 * PostgreSQL they would make the calls that the other end-to-end files prove there; they took a
 * third of this pass's time.
 */
export const OUTSIDE_THE_DATABASE = [
  'test/e2e/cli-*.test.ts',
  'test/e2e/agent-binary.test.ts',
  'test/e2e/agent-daemon.test.ts',
  'test/e2e/agent-enroll-cli.test.ts',
  'test/e2e/agent-proxy.test.ts',
  'test/e2e/agent-secret-masking.test.ts',
  'test/e2e/agent-self-update.test.ts',
  'test/e2e/agent-self-update-no-previous.test.ts',
  'test/e2e/agent-tls.test.ts',
  'test/e2e/agent-workflows-cli.test.ts',
  'test/e2e/flapping-link.test.ts',
  'test/e2e/login-throttle.test.ts',
  'test/e2e/skewed-clock.test.ts',
  'test/e2e/slow-clients.test.ts',
  'test/e2e/trusted-proxy.test.ts',
];

// Spread, not mergeConfig: that would append the lists to the base's instead of replacing them.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    // One group of files, two at a time (the base's `maxWorkers`), rather than the main pass's two groups.
    projects: undefined,
    include: POSTGRES_PASS,
    exclude: [...(base.test?.exclude ?? []), ...SAME_ON_BOTH_PASSES, ...OUTSIDE_THE_DATABASE],
    // The route fuzzer's seeded cases again, 40 a route instead of 80: what PostgreSQL refuses
    // that SQLite takes (a NUL in a text, an out-of-range integer) shows in any of them, and the
    // whole set took 66 s of this pass.
    env: { DROVER_TEST_DATABASE: 'postgres', DROVER_FUZZ_CASES: '40' },
  },
});
