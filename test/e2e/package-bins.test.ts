import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
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

  it('are licensed under the Apache License 2.0, whose text is LICENSE', () => {
    for (const dir of ['.', 'shared', 'coordinator', 'agent', 'cli', 'dashboard', 'test', 'bench']) {
      const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, dir, 'package.json'), 'utf8')) as {
        license?: string;
      };
      expect(manifest.license, `${dir}/package.json`).toBe('Apache-2.0');
    }
    const text = fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8');
    expect(text).toMatch(/^\s+Apache License\n\s+Version 2\.0, January 2004\n/);
    expect(text).toContain('APPENDIX: How to apply the Apache License to your work.');
    expect(createHash('sha256').update(text).digest('hex')).toBe(
      'cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30', // apache.org's LICENSE-2.0.txt
    );
  });

  it.each(bins)('$name runs the built CLI through the link pnpm made', ({ name }) => {
    const res = spawnSync(path.join(ROOT, 'test/node_modules/.bin', name), ['--version'], { encoding: 'utf8' });
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
