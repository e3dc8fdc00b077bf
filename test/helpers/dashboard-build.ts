import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const SOURCES = [
  'dashboard/src',
  'dashboard/public',
  'dashboard/index.html',
  'dashboard/vite.config.ts',
  'dashboard/precompress.ts',
  // The dashboard bundles @drover/shared/params from its sources.
  'shared/src',
].map((p) => path.join(REPO, p));
export const DASHBOARD_INDEX = path.join(REPO, 'coordinator/dashboard-dist/index.html');

function newestChange(file: string): number {
  if (!fs.existsSync(file)) return 0;
  const stat = fs.statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...fs.readdirSync(file).map((name) => newestChange(path.join(file, name))));
}

/**
 * Vitest's global setup: the tests that open the dashboard need its build (`pnpm build` makes
 * it); build it once, before any test file runs, when it is missing or older than its sources.
 */
export default function buildDashboardWhenStale(): void {
  const built = fs.existsSync(DASHBOARD_INDEX) ? fs.statSync(DASHBOARD_INDEX).mtimeMs : 0;
  if (built >= Math.max(...SOURCES.map(newestChange))) return;
  // Vitest sets NODE_ENV=test, which would make Vite bundle React's development build.
  const env = { ...process.env, NODE_ENV: 'production' };
  execFileSync('pnpm', ['--filter', '@drover/dashboard', 'build'], {
    cwd: REPO,
    env,
    stdio: 'ignore',
    timeout: 120_000,
  });
}
