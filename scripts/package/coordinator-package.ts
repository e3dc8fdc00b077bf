import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { shebangNodeFlags } from '../lib/node-flags.js';
import { assertArch, GNU_TRIPLET, libraryDepends, NODE_ARCH, type DebArch } from './elf.js';
import { fillTemplate, install, normalizeModes, PACKAGING, ROOT, write, writeDocs, type DebPackage } from './deb.js';

/**
 * The drover-coordinator package's files: the coordinator with its production dependencies in
 * /usr/lib/drover-coordinator (`pnpm deploy` from the lockfile: the same versions the tests ran),
 * the official Node.js build of the package's architecture beside it, the /usr/bin launcher, its
 * unit and its environment file (docs/install.md has the layout).
 */

const LIB = 'usr/lib/drover-coordinator';

/**
 * The coordinator and its production dependencies, as one directory tree without links
 * (`pnpm deploy --prod`, node-linker=hoisted, from the lockfile and pnpm's store), with what only
 * development uses taken out. The same for every architecture but better-sqlite3's prebuilt
 * addons, chosen per package (below).
 */
export function deployCoordinator(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
  execFileSync(
    'pnpm',
    [
      '--filter',
      '@drover/coordinator',
      '--config.inject-workspace-packages=true',
      '--config.node-linker=hoisted',
      'deploy',
      '--prod',
      '--prefer-offline',
      dir,
    ],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const remove = [
    'src',
    'test',
    'bin', // pnpm's launcher of the workspace: /usr/bin/drover-coordinator replaces it
    'tsconfig.json',
    'pnpm-lock.yaml',
    'node_modules/.bin',
    'node_modules/.pnpm',
    'node_modules/.modules.yaml',
    'node_modules/.pnpm-workspace-state-v1.json',
    'node_modules/@types',
    'node_modules/@drover/shared/src',
    'node_modules/@drover/shared/test',
    'node_modules/@drover/shared/tsconfig.json',
    // better-sqlite3's C sources (it loads a prebuilt addon)
    'node_modules/better-sqlite3/deps',
    'node_modules/better-sqlite3/src',
    'node_modules/better-sqlite3/binding.gyp',
  ];
  for (const rel of remove) fs.rmSync(path.join(dir, rel), { recursive: true, force: true });
  pruneNodeModules(path.join(dir, 'node_modules'));
  // The workspace's own compiled files: no declarations or source maps (their sources are not
  // shipped), nor the compiler's incremental build state (`.tsbuildinfo`, tsc -b's).
  for (const tree of ['dist', 'node_modules/@drover/shared/dist']) {
    for (const file of fs.readdirSync(path.join(dir, tree), { recursive: true, encoding: 'utf8' })) {
      if (/\.(d\.ts|map|tsbuildinfo)$/.test(file)) fs.rmSync(path.join(dir, tree, file));
    }
  }
  // The manifest names the absolute path of the checkout it was deployed from and the patches; the
  // installed coordinator only needs its name, version and module type.
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
  const { name, version, type, description, license } = manifest;
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    `${JSON.stringify({ name, version, private: true, type, description, license }, null, 2)}\n`,
  );
}

/** Directories at an npm package's root that only its development uses. */
const DEV_DIRS = new Set([
  'test',
  'tests',
  '__tests__',
  'spec',
  'integration',
  'example',
  'examples',
  'benchmark',
  'benchmarks',
  'bench',
  'docs',
  'coverage',
]);
/** Files at an npm package's root that only its development uses. */
const DEV_FILES =
  /^(eslint\.config\.[cm]?js|test\.js|bench\.js|example\.js|tsconfig(\..*)?\.json|Makefile|index\.html)$/;
/** Files nothing loads at run time: TypeScript sources and declarations, source maps. */
const NEVER_LOADED = /\.([cm]?ts|map)$/;
const MARKDOWN_NOT_LICENSE = /^(?!(licen[cs]e|copying|notice)).*\.(md|markdown)$/i;

/**
 * Takes out of the dependencies what their development uses and nothing at run time loads
 * (tests, examples, benchmarks, documentation, TypeScript sources and declarations, source maps,
 * dotfiles: the repository's and editors' settings), keeping every license file: a smaller package, and no
 * test fixtures (broken archives, shell scripts) for lintian to trip on.
 */
function pruneNodeModules(dir: string): void {
  const isPackage = (d: string) => fs.existsSync(path.join(d, 'package.json'));
  const walk = (current: string) => {
    const packageRoot = isPackage(current);
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      const dev = entry.isDirectory() ? DEV_DIRS.has(entry.name) : DEV_FILES.test(entry.name);
      if (
        entry.name.startsWith('.') ||
        (packageRoot && dev) ||
        (entry.isFile() && (NEVER_LOADED.test(entry.name) || MARKDOWN_NOT_LICENSE.test(entry.name)))
      ) {
        fs.rmSync(full, { recursive: true, force: true });
      } else if (entry.isDirectory()) {
        walk(full);
        if (fs.readdirSync(full).length === 0) fs.rmdirSync(full);
      }
    }
  };
  walk(dir);
}

/**
 * Strips an executable or library for `arch`: this machine's `strip` for its own architecture,
 * else `<triplet>-strip` (Debian's binutils-<triplet>). Without one the file stays unstripped
 * (the Node.js runtime ~17 MiB larger), which this says.
 */
export function strip(file: string, arch: DebArch, flags: string[] = []): void {
  const tools =
    NODE_ARCH[arch] === process.arch ? ['strip', `${GNU_TRIPLET[arch]}-strip`] : [`${GNU_TRIPLET[arch]}-strip`];
  for (const tool of tools) {
    try {
      execFileSync(tool, [...flags, file], { stdio: ['ignore', 'ignore', 'pipe'] });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  console.warn(`package: no ${tools.join(' or ')} on this machine: ${path.basename(file)} for ${arch} is not stripped`);
}

/** Stages the coordinator package for `arch` in `stage` from the deployed tree; answers its description. */
export function stageCoordinator(
  stage: string,
  arch: DebArch,
  version: string,
  deployed: string,
  runtime: string,
): DebPackage {
  const lib = path.join(stage, LIB);
  fs.mkdirSync(path.dirname(lib), { recursive: true });
  fs.cpSync(deployed, lib, { recursive: true });
  // better-sqlite3 carries prebuilt addons for every platform: this architecture's glibc one only.
  const prebuilds = path.join(lib, 'node_modules/better-sqlite3/prebuilds');
  const keep = `linux-${NODE_ARCH[arch]}.node`;
  if (!fs.existsSync(path.join(prebuilds, keep))) {
    throw new Error(`better-sqlite3 has no prebuilt addon for ${arch} (${keep})`);
  }
  for (const file of fs.readdirSync(prebuilds)) if (file !== keep) fs.rmSync(path.join(prebuilds, file));
  for (const file of fs.readdirSync(path.join(lib, 'node_modules/better-sqlite3/lib'))) {
    if (/^(linux|linuxmusl|darwin|win32)-/.test(file) && file !== `linux-${NODE_ARCH[arch]}.js`) {
      fs.rmSync(path.join(lib, 'node_modules/better-sqlite3/lib', file));
    }
  }

  install(path.join(runtime, 'bin/node'), stage, `${LIB}/bin/node`, 0o755);
  strip(path.join(stage, LIB, 'bin/node'), arch);
  strip(path.join(prebuilds, keep), arch, ['--strip-unneeded']);
  normalizeModes(lib, new Set(['bin/node']));
  assertArch(stage, arch);

  const flags = shebangNodeFlags(path.join(ROOT, 'coordinator/dist/cli/main.js'));
  const launcher = fs.readFileSync(path.join(PACKAGING, 'drover-coordinator/drover-coordinator'), 'utf8');
  write(
    stage,
    'usr/bin/drover-coordinator',
    fillTemplate(launcher, { NODE_FLAGS: flags.join(' ') }, 'launcher'),
    0o755,
  );
  install(
    path.join(PACKAGING, 'drover-coordinator/drover-coordinator.service'),
    stage,
    'lib/systemd/system/drover-coordinator.service',
    0o644,
  );
  // Root's only: it holds passwords and keys.
  install(path.join(PACKAGING, 'drover-coordinator/coordinator.env'), stage, 'etc/drover/coordinator.env', 0o600);

  const pkg: DebPackage = {
    name: 'drover-coordinator',
    version,
    arch,
    depends: ['adduser', ...libraryDepends(stage)],
    summary: 'Drover coordinator: dispatches jobs and releases to fleets of edge agents',
    description: `
The server of Drover, self-hosted job dispatch, file exchange and over-the-air
deployment for fleets of edge machines: its HTTP API, the web dashboard, the
agents' connections, schedules, files and releases, on SQLite in its data
directory or on PostgreSQL.

This package installs the coordinator with its dependencies and the Node.js
runtime it runs on in /usr/lib/drover-coordinator, the command
drover-coordinator, the system user drover and the service
drover-coordinator.service, which it does not start: configure
/etc/drover/coordinator.env, then enable it.`,
    conffiles: ['/etc/drover/coordinator.env'],
    scriptValues: {
      PACKAGE: 'drover-coordinator',
      USER: 'drover',
      GECOS: 'Drover coordinator',
      DATA_DIR: '/var/lib/drover',
      MORE_DIRS: '# (nothing in it: the coordinator makes what it needs)',
      CONFIG: '/etc/drover/coordinator.env',
    },
  };
  const help = execFileSync(process.execPath, [path.join(ROOT, 'coordinator/dist/cli/main.js'), '--help'], {
    encoding: 'utf8',
  });
  writeDocs(
    stage,
    pkg,
    help,
    `/usr/lib/drover-coordinator/bin/node is the Node.js runtime (MIT license and the licenses of the libraries it bundles: /usr/share/doc/drover-coordinator/LICENSE-nodejs); /usr/lib/drover-coordinator/node_modules holds the coordinator's npm dependencies, each with its own license file.`,
  );
  install(path.join(runtime, 'LICENSE'), stage, 'usr/share/doc/drover-coordinator/LICENSE-nodejs', 0o644);
  install(
    path.join(PACKAGING, 'drover-coordinator/lintian-overrides'),
    stage,
    'usr/share/lintian/overrides/drover-coordinator',
    0o644,
  );
  return pkg;
}

export function coordinatorVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(ROOT, 'coordinator/package.json'), 'utf8')) as { version: string })
    .version;
}
