import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The PostgreSQL pass of the suite (`pnpm test:postgres`, run by scripts/test.sh after the whole
 * suite): end-to-end files of the public and management API, the agent protocol, storage, OTA,
 * chat and metrics, run again with every test coordinator on its own PostgreSQL database
 * (`DROVER_TEST_DATABASE=postgres`, test/helpers/coordinator.ts). The repositories' contract
 * tests run on both databases in the main pass already. Files that reach into a coordinator's
 * SQLite connection, or restart one on the same data directory, stay SQLite-only.
 */
export const POSTGRES_PASS = [
  'test/e2e/api-tokens.test.ts',
  'test/e2e/chat-discord.test.ts',
  'test/e2e/chat-notifications.test.ts',
  'test/e2e/chat-slack.test.ts',
  'test/e2e/dashboard-sessions.test.ts',
  'test/e2e/discovery-access.test.ts',
  'test/e2e/discovery.test.ts',
  'test/e2e/job-files-protocol.test.ts',
  'test/e2e/login.test.ts',
  'test/e2e/management-agents.test.ts',
  'test/e2e/management-audit.test.ts',
  'test/e2e/management-isolation.test.ts',
  'test/e2e/management-workflows.test.ts',
  'test/e2e/metrics-jobs.test.ts',
  'test/e2e/ota-apps.test.ts',
  'test/e2e/ota-deploy-protocol.test.ts',
  'test/e2e/ota-releases.test.ts',
  'test/e2e/ota-retries.test.ts',
  'test/e2e/refusal-order.test.ts',
  'test/e2e/route-fuzz.test.ts',
  'test/e2e/route-security.test.ts',
  'test/e2e/storage-limits.test.ts',
  'test/e2e/storage-permissions.test.ts',
  'test/e2e/storage-s3.test.ts',
  'test/e2e/storage-upload-flow.test.ts',
  'test/e2e/storage-validation.test.ts',
  'test/e2e/trigger-run-agent.test.ts',
  'test/e2e/trigger-run-by-hand.test.ts',
  'test/e2e/trigger-run-patterns.test.ts',
  'test/e2e/trigger-run-rules.test.ts',
  'test/e2e/triggers.test.ts',
];

// Spread, not mergeConfig: that would append the list to the base's include instead of replacing it.
export default defineConfig({
  ...base,
  test: { ...base.test, include: POSTGRES_PASS, env: { DROVER_TEST_DATABASE: 'postgres' } },
});
