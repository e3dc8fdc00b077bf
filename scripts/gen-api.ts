/**
 * `pnpm gen:api`: writes the OpenAPI document the coordinator serves (shared/openapi/openapi.json)
 * and the TypeScript types of it that the dashboard and the CLI use (shared/src/api/openapi.ts).
 * Run it after changing a route's schema, and commit both files. `--check` writes nothing and
 * exits 1 when a committed file is stale (test/e2e/openapi.test.ts checks the same in the tests).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createCoordinator } from '../coordinator/src/coordinator.js';
import { loadConfig } from '../coordinator/src/config/config.js';
import { createLogger } from '../coordinator/src/logger.js';
import { REGENERATE, renderApiFiles, ROOT, servedWithoutServers, staleFiles } from './lib/api-files.js';

/**
 * The OpenAPI document as a coordinator serves it, without its `servers` (a coordinator names its
 * own public URL there; the committed copy names none). The coordinator is built on SQLite in a
 * temporary directory from defaults alone (no environment), and never listens.
 */
async function buildDocument(): Promise<Record<string, unknown>> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-openapi-'));
  try {
    const config = loadConfig({}, { dataDir, logLevel: 'silent' });
    const coordinator = await createCoordinator(config, createLogger(config.logLevel));
    try {
      await coordinator.app.ready();
      return servedWithoutServers(coordinator.app.swagger() as unknown as Record<string, unknown>);
    } finally {
      await coordinator.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const check = process.argv.includes('--check');
const files = await renderApiFiles(await buildDocument());
const stale = staleFiles(files);
if (check) {
  if (stale.length > 0) {
    console.error(`gen:api: ${stale.join(', ')} not what the coordinator serves: run \`${REGENERATE}\` and commit`);
    process.exit(1);
  }
  console.log('gen:api: the API document and its types are up to date');
} else {
  for (const file of stale) {
    fs.mkdirSync(path.dirname(path.join(ROOT, file)), { recursive: true });
    fs.writeFileSync(path.join(ROOT, file), files.get(file)!);
    console.log(`gen:api: wrote ${file}`);
  }
  if (stale.length === 0) console.log('gen:api: the API document and its types were up to date');
}
