import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { shebangNodeFlags } from '../../scripts/lib/node-flags.js';

/**
 * The commands the workspace packages declare (`bin`): pnpm links them into the packages that
 * depend on them at install time, before anything is built, so each must be a file of the
 * repository (a launcher of the built CLI), never one the build makes; otherwise every fresh
 * install warns `Failed to create bin`.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const tracked = new Set(execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n'));

const bins = ['shared', 'coordinator', 'agent', 'cli', 'test', 'bench'].flatMap((dir) => {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, dir, 'package.json'), 'utf8')) as {
    bin?: Record<string, string>;
  };
  return Object.entries(manifest.bin ?? {}).map(([name, file]) => ({ name, file: path.join(dir, file) }));
});

describe('the workspace commands', () => {
  it('are drover-coordinator, drover-agent and drover', () => {
    expect(bins.map((b) => b.name).sort()).toEqual(['drover', 'drover-agent', 'drover-coordinator']);
  });

  it.each(bins)('$name is a file of the repository, not of the build', ({ file }) => {
    expect(tracked.has(file), `${file} is not tracked by git`).toBe(true);
    expect(file).not.toMatch(/(^|\/)dist\//);
  });

  it('drover-coordinator runs with the Node flags of the CLI it launches', () => {
    const launcher = bins.find((b) => b.name === 'drover-coordinator')!.file;
    expect(shebangNodeFlags(path.join(ROOT, launcher))).toEqual(
      shebangNodeFlags(path.join(ROOT, 'coordinator/src/cli/main.ts')),
    );
  });

  it.each(bins)('$name runs the built CLI through the link pnpm made', ({ name }) => {
    const res = spawnSync(path.join(ROOT, 'test/node_modules/.bin', name), ['--version'], { encoding: 'utf8' });
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
