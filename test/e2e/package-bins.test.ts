import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shebangNodeFlags } from '../../scripts/lib/node-flags.js';
import { PINNED_NODE, userPath } from '../helpers/old-node.js';

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

/**
 * The repository's own `drover`, `drover-agent` and `drover-coordinator` (scripts/lib/launch.sh):
 * the built commands on a Node.js Drover runs on, from any directory, through a symbolic link,
 * where the shell's `node` is too old when setup fetched Node.js 24 (README.md, "Commands from
 * the checkout").
 */
describe('the commands of the checkout', () => {
  const WRAPPERS = ['drover', 'drover-agent', 'drover-coordinator'];
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-wrappers-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it.each(WRAPPERS)('%s is an executable file of the repository', (name) => {
    const mode = execFileSync('git', ['ls-files', '-s', name, 'scripts/lib/launch.sh'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(
      mode
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ')[0]),
    ).toEqual(['100755', '100755']);
  });

  it.each(WRAPPERS)('%s runs the built command from another directory and through a link', (name) => {
    const { PATH, oldNode } = userPath(path.join(dir, `path-${name}`));
    const link = path.join(dir, `link-${name}`);
    fs.symlinkSync(path.join(ROOT, name), link);
    for (const command of [path.join(ROOT, name), link]) {
      const res = spawnSync(command, ['--version'], { cwd: dir, env: { PATH, HOME: dir }, encoding: 'utf8' });
      expect(res.stderr).toBe('');
      expect(res.status).toBe(0);
      expect(res.stdout).toMatch(/^\d+\.\d+\.\d+ \(Node\.js (22|24)\./);
      if (oldNode)
        expect(res.stdout).toContain(`(Node.js ${path.basename(path.dirname(path.dirname(PINNED_NODE))).slice(1)},`);
    }
  });

  it('says in one line what to run when no Node.js it runs on is there, or nothing is built', () => {
    // A copy of the launcher in a checkout without .cache/node or a build.
    const checkout = path.join(dir, 'checkout');
    fs.mkdirSync(path.join(checkout, 'scripts/lib'), { recursive: true });
    for (const file of ['drover', 'scripts/lib/launch.sh', 'scripts/lib/node-version.sh']) {
      fs.copyFileSync(path.join(ROOT, file), path.join(checkout, file));
    }
    const old = path.join(dir, 'old');
    fs.mkdirSync(old);
    fs.writeFileSync(path.join(old, 'node'), '#!/bin/sh\n[ "$1" = --version ] && { echo v20.20.2; exit 0; }\nexit 1\n');
    fs.chmodSync(path.join(old, 'node'), 0o755);
    const tooOld = spawnSync(path.join(checkout, 'drover'), ['--version'], {
      env: { PATH: `${old}:/usr/bin:/bin` },
      encoding: 'utf8',
    });
    expect(tooOld.status).toBe(1);
    expect(tooOld.stderr).toMatch(
      new RegExp(
        `^drover: Node\\.js 22 \\(from 22\\.14\\) or 24 is required \\(found v20\\.20\\.2\\); run \`bash scripts/setup\\.sh\` in ${checkout}, which fetches Node\\.js [\\d.]+ into \\.cache/node\\n$`,
      ),
    );
    const current = path.join(dir, 'current');
    fs.mkdirSync(current);
    fs.symlinkSync(process.execPath, path.join(current, 'node'));
    const unbuilt = spawnSync(path.join(checkout, 'drover'), ['--version'], {
      env: { PATH: `${current}:/usr/bin:/bin` },
      encoding: 'utf8',
    });
    expect(unbuilt.status).toBe(1);
    expect(unbuilt.stderr).toBe(`drover: not built yet: run \`bash scripts/setup.sh\` in ${checkout}\n`);
  });
});
