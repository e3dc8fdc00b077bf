import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Started on a Node.js too old for Drover, the commands say so in one line and exit 1 instead of
 * failing somewhere inside with a stack trace.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LINE = (name: string, version: string, node: string) =>
  `${name}: Node.js 22 (from 22.14) or 24 is required; this is Node.js ${version} (${node})\n`;

/** Makes the process report `version` as its Node.js version before anything else loads. */
const pretend = (version: string) =>
  `--import=data:text/javascript,Object.defineProperty(process.versions,"node",{value:"${version}"})`;

const SOURCES = [
  { name: 'drover-coordinator', main: 'coordinator/src/cli/main.ts', built: 'coordinator/dist/cli/main.js' },
  { name: 'drover-agent', main: 'agent/src/cli/main.ts', built: 'agent/dist/cli/main.js' },
];

/** A node older than 22 installed on this machine, if any (Debian's, for example). */
function olderNode(): { path: string; version: string } | undefined {
  for (const path of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!fs.existsSync(path)) continue;
    const version = spawnSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    if (Number(version.split('.')[0]) < 22) return { path, version };
  }
  return undefined;
}
const older = olderNode();

describe('a command started on a Node.js older than 22.14', () => {
  it.each(SOURCES)('$name prints the versions that work in one line and exits 1', ({ name, main }) => {
    const args = [pretend('20.20.2'), '--conditions=drover-source', '--import', 'tsx', main, '--version'];
    const res = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8' });
    expect(res.stderr).toBe(LINE(name, '20.20.2', process.execPath));
    expect(res.stdout).toBe('');
    expect(res.status).toBe(1);
  });

  it.each(SOURCES)('$name says so on 22.13 too', ({ name, main }) => {
    const args = [pretend('22.13.0'), '--conditions=drover-source', '--import', 'tsx', main, 'help'];
    const res = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8' });
    expect(res.stderr).toBe(LINE(name, '22.13.0', process.execPath));
    expect(res.status).toBe(1);
  });

  it.skipIf(!older).each(SOURCES)(`$name, built, on this machine's own older node`, ({ name, built }) => {
    const res = spawnSync(older!.path, [built, '--version'], { cwd: ROOT, encoding: 'utf8' });
    expect(res.stderr).toBe(LINE(name, older!.version, older!.path));
    expect(res.stdout).toBe('');
    expect(res.status).toBe(1);
  });
});
