import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const AGENT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = path.join(AGENT, 'src/cli/main.ts');
const RECORDER = path.join(AGENT, 'test/fixtures/record-modules.mjs');
/** The packages only the daemon (and `enroll`, `workflows`) use; a short command must not load them. */
const DAEMON_PACKAGES = ['eventsource-parser', 'pino', 'execa', 'yaml'];

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-lazy-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** Runs `drover-agent <args>` from the sources; the npm packages it loaded, by name. */
function packagesLoadedBy(...args: string[]): Promise<{ code: number | null; packages: Set<string> }> {
  const record = path.join(root, 'modules.txt');
  fs.writeFileSync(record, '');
  const argv = ['--conditions=drover-source', '--import', 'tsx', '--import', RECORDER, MAIN, ...args];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, argv, { env: { ...process.env, RECORD_MODULES_TO: record } }, (error) => {
      if (error && typeof error.code !== 'number') return reject(error);
      const packages = new Set<string>();
      for (const url of fs.readFileSync(record, 'utf8').split('\n')) {
        const name = /\/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];
        if (name) packages.add(name);
      }
      resolve({ code: error ? (error.code as number) : 0, packages });
    });
  });
}

describe('drover-agent loads what a command needs', () => {
  it('--version, status and logs load none of the daemon packages', async () => {
    for (const args of [['--version'], ['status', '--state-dir', root], ['logs', '--state-dir', root]]) {
      const { packages } = await packagesLoadedBy(...args);
      expect(packages, args.join(' ')).toContain('commander');
      expect(
        DAEMON_PACKAGES.filter((p) => packages.has(p)),
        args.join(' '),
      ).toEqual([]);
    }
  });

  it('workflows loads the YAML parser, and only then', async () => {
    const { code, packages } = await packagesLoadedBy('workflows', '--state-dir', root);
    expect(code).toBe(0);
    expect(packages).toContain('yaml');
    expect(packages).not.toContain('eventsource-parser');
  });
});
