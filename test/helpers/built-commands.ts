import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The `drover-agent` and `drover-coordinator` commands the tests run as child processes, as
 * `tsc -b` builds them from the sources (agent/dist, coordinator/dist, shared/dist): the global
 * setup below builds what changed before any test file runs. Through tsx instead, each start cost
 * more CPU (0.35 s for the agent's, 0.6 s for the coordinator's, of 0.55 and 0.85 s), and the
 * suite starts hundreds of them.
 */
const REPO = fileURLToPath(new URL('../..', import.meta.url));
export const AGENT_MAIN = path.join(REPO, 'agent/dist/cli/main.js');
export const COORDINATOR_MAIN = path.join(REPO, 'coordinator/dist/cli/main.js');

/**
 * Vitest's global setup: `tsc -b`, which rebuilds the projects whose sources changed (about a
 * second when none did). A type error does not stop it from writing the JavaScript (the
 * type-check reports it); a missing command after it does stop the run.
 */
export default function buildCommands(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-b'], { cwd: REPO, stdio: 'pipe', timeout: 240_000 });
  } catch {
    // Type errors: the type-check names them; the JavaScript was written all the same.
  }
  for (const main of [AGENT_MAIN, COORDINATOR_MAIN]) {
    if (!fs.existsSync(main)) throw new Error(`tsc -b did not build ${path.relative(REPO, main)}`);
  }
}
