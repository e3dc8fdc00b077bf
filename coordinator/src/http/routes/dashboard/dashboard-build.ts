import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where `pnpm build` puts the dashboard (the `dashboard/` package's Vite build): the folder
 * `coordinator/dashboard-dist/`. This file is three folders below the package in the sources
 * (src/http/routes/dashboard/) and in the build (dist/http/routes/dashboard/), so one relative
 * path finds it whether the coordinator runs from its TypeScript or from its built JavaScript.
 */
export const DASHBOARD_DIST = fileURLToPath(new URL('../../../../dashboard-dist/', import.meta.url));

/**
 * The built dashboard, read once when the coordinator starts: its index.html and its assets
 * folder. A new build is served after a restart (its assets are registered at start too).
 */
export class DashboardBuild {
  readonly assetsDir: string;
  /** index.html, or null when the dashboard was not built (`pnpm build` builds it). */
  readonly indexHtml: Buffer | null;

  constructor(readonly dir: string = DASHBOARD_DIST) {
    this.assetsDir = path.join(dir, 'assets');
    this.indexHtml = readIfPresent(path.join(dir, 'index.html'));
  }

  get built(): boolean {
    return this.indexHtml !== null;
  }
}

function readIfPresent(file: string): Buffer | null {
  try {
    return fs.readFileSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
