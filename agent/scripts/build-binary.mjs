#!/usr/bin/env node
/**
 * Builds the agent as ONE executable file, `agent/dist/drover-agent`, with Node's single
 * executable application support (https://nodejs.org/api/single-executable-applications.html),
 * from the Node.js 24 runtime (the one the fleet runs; `drover-agent --version` names it):
 *
 * 0. Run by another Node than 24, the build runs itself again with the Node 24 the setup scripts
 *    use (the machine's own, else the pinned one in .cache/node, fetched when missing:
 *    scripts/lib/node.sh): the blob below only fits the Node version that made it.
 * 1. esbuild bundles the CLI (src/cli/program.ts, with @drover/shared taken from its TypeScript
 *    source through the `source` export condition) and every dependency into one minified
 *    CommonJS file (a SEA's main script runs as CommonJS: no top-level await, no `require` of
 *    files). The commands load what only they use with `import()`, which esbuild turns into
 *    modules evaluated on first use: `--version` runs none of the daemon's code.
 * 2. `node --experimental-sea-config sea-config.json` turns it into a preparation blob, with V8's
 *    code cache of the bundle (`useCodeCache`), so that a start deserializes instead of compiling,
 *    and the V8 options the executable starts with (`execArgv`, EXEC_ARGV below).
 * 3. A copy of this very `node` binary is stripped of its symbol tables and debug information
 *    (`strip`: the official Node 24 build goes from ~121 to ~104 MiB) and gets the blob injected
 *    with postject, under the resource name NODE_SEA_BLOB, flipping the sentinel fuse
 *    NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2. No code signing on Linux.
 * 4. The result is copied to its final name (see `install` below for why a copy).
 *
 * docs/performance.md ("Agent footprint") has the figures behind each step.
 *
 * Usage: node agent/scripts/build-binary.mjs [--if-stale] [--node <binary>] [--out <file>] [--archive]
 *   --if-stale       do nothing when the binary is newer than every source file it is made from
 *                    and was made from the same runtime.
 *   --node <binary>  inject into this Node binary instead of the running one, e.g. the linux-arm64
 *                    build of the SAME Node version, for ARM machines. The blob then has no code
 *                    cache (it would be made by this machine's V8 for this machine's architecture).
 *   --out <file>     where to write the executable (default agent/dist/drover-agent).
 *   --archive        also pack the executable as the release archive
 *                    `drover-agent-<version>-linux-<arch>.tar.xz` beside it (xz: ~1.5 min).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const AGENT = fileURLToPath(new URL('..', import.meta.url));
const REPO = path.dirname(AGENT);
const DIST = path.join(AGENT, 'dist');
const WORK = path.join(DIST, 'sea');
const BUNDLE = path.join(WORK, 'drover-agent.cjs');
const BLOB = path.join(WORK, 'sea-prep.blob');
const CONFIG = path.join(WORK, 'sea-config.json');
const BINARY = path.resolve(option('--out') ?? path.join(DIST, 'drover-agent'));
const BASE_NODE = fs.realpathSync(option('--node') ?? process.execPath);
const STAMP = path.join(WORK, `${path.basename(BINARY)}.base-node.json`);
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/** The major version of Node.js the binary embeds. */
const RUNTIME_MAJOR = 24;
/**
 * V8 options the executable starts with (the SEA configuration's `execArgv`), measured on the idle
 * daemon (docs/performance.md, "Agent footprint"): WebAssembly, whose only use is undici's HTTP
 * parser, stays on the baseline compiler (`--liftoff-only`: ~8 MiB of tier-up memory less; set at
 * run time, as Node 20's executables had to, Node 24 ignores it), and no Maglev, the mid-tier
 * JavaScript compiler (~3 MiB of its code pages untouched; the agent's few requests a minute do not
 * need it). The blob is made with the same options, or V8 would reject its code cache at start.
 */
const EXEC_ARGV = ['--liftoff-only', '--no-maglev'];
/** A code cache is made by the running V8, so it only fits a binary of the running Node. */
const CODE_CACHE = BASE_NODE === fs.realpathSync(process.execPath);

/** The value following `name` on the command line, if any. */
function option(name) {
  const i = process.argv.indexOf(name);
  if (i === -1) return undefined;
  const value = process.argv[i + 1];
  if (value === undefined || value.startsWith('--')) throw new Error(`${name} needs a value`);
  return value;
}

const require = createRequire(path.join(AGENT, 'package.json'));

/** The bundle's entry: runs the CLI and sets the exit code (CommonJS: no top-level await). */
const ENTRY = `
import { runCli } from './program.ts';
runCli(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (error) => { console.error(error); process.exitCode = 1; },
);
`;

/** Runs this build again with Node 24 (scripts/lib/node.sh finds or fetches it); returns its exit code. */
function rerunWithNode24() {
  const script = `DROVER_NODE_MAJOR=${RUNTIME_MAJOR}; . scripts/lib/node.sh && exec node "$@"`;
  const args = ['-c', script, 'build-binary', fileURLToPath(import.meta.url), ...process.argv.slice(2)];
  const result = spawnSync('bash', args, { cwd: REPO, stdio: 'inherit' });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

async function main() {
  if (Number(process.versions.node.split('.')[0]) !== RUNTIME_MAJOR) {
    console.log(`build-binary: this is Node.js ${process.versions.node}; building with Node.js ${RUNTIME_MAJOR}`);
    process.exitCode = rerunWithNode24();
    return;
  }
  if (process.argv.includes('--if-stale') && upToDate()) {
    console.log(`${path.relative(REPO, BINARY)} is up to date`);
  } else {
    const started = Date.now();
    fs.mkdirSync(WORK, { recursive: true });
    fs.mkdirSync(path.dirname(BINARY), { recursive: true });
    await bundle();
    makeBlob();
    await inject();
    console.log(`built ${path.relative(REPO, BINARY)} (${mib(BINARY)}) in ${seconds(started)}`);
  }
  if (process.argv.includes('--archive')) archive();
}

const mib = (file) => `${(fs.statSync(file).size / 1024 / 1024).toFixed(1)} MiB`;
const seconds = (started) => `${((Date.now() - started) / 1000).toFixed(1)}s`;

/**
 * The release archive, `<name>-<version>-<os>-<arch>.tar.xz` beside the binary: one directory
 * holding the executable. xz at its default level: -9 saves ~1% for twice the time.
 */
function archive() {
  const { version } = JSON.parse(fs.readFileSync(path.join(AGENT, 'package.json'), 'utf8'));
  const name = `drover-agent-${version}-${process.platform}-${elfArch(BINARY)}`;
  const file = path.join(path.dirname(BINARY), `${name}.tar.xz`);
  if (fs.existsSync(file) && fs.statSync(file).mtimeMs > fs.statSync(BINARY).mtimeMs) {
    console.log(`${path.relative(REPO, file)} is up to date`);
    return;
  }
  const started = Date.now();
  const stage = path.join(WORK, 'archive');
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(path.join(stage, name), { recursive: true });
  fs.copyFileSync(BINARY, path.join(stage, name, 'drover-agent'));
  fs.chmodSync(path.join(stage, name, 'drover-agent'), 0o755);
  const temp = `${file}.${process.pid}.tmp`;
  try {
    execFileSync('tar', ['-cJf', temp, '--owner=0', '--group=0', '-C', stage, name], { stdio: 'inherit' });
    fs.renameSync(temp, file);
  } finally {
    fs.rmSync(temp, { force: true });
    fs.rmSync(stage, { recursive: true, force: true });
  }
  console.log(`archived ${path.relative(REPO, file)} (${mib(file)}) in ${seconds(started)}`);
}

async function bundle() {
  const esbuild = require('esbuild');
  const result = await esbuild.build({
    stdin: { contents: ENTRY, resolveDir: path.join(AGENT, 'src', 'cli'), sourcefile: 'sea-entry.ts', loader: 'ts' },
    bundle: true,
    platform: 'node',
    target: `node${RUNTIME_MAJOR}`,
    format: 'cjs',
    minify: true,
    // undici's cookie helpers read `globalThis.Headers` when they load, which makes Node load its
    // own internal copy of undici next to the bundled one (~1 MiB of memory for nothing): the agent
    // never hands them Node's Headers, so that reference is left out.
    define: { 'globalThis.Headers': 'undefined' },
    // Workspace packages from their TypeScript sources (no build needed). Not via the `source`
    // export condition: some dependencies publish a `source` condition of their own.
    alias: { '@drover/shared': path.join(REPO, 'shared', 'src', 'index.ts') },
    mainFields: ['module', 'main'],
    outfile: BUNDLE,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
  });
  // `import.meta` is empty in CommonJS: code relying on it would misbehave inside the binary.
  const importMeta = result.warnings.filter((w) => w.id === 'empty-import-meta');
  if (importMeta.length > 0) {
    const where = importMeta.map((w) => `${w.location?.file}:${w.location?.line}`).join(', ');
    throw new Error(`the bundle uses import.meta, which is empty in a single executable: ${where}`);
  }
  // A SEA can `require` built-in modules only: anything left outside the bundle would fail at run time.
  const imports = Object.values(result.metafile.outputs).flatMap((output) => output.imports);
  const external = imports.filter((i) => i.external && !i.path.startsWith('node:') && !isBuiltin(i.path));
  if (external.length > 0) {
    throw new Error(`the bundle requires modules outside it: ${[...new Set(external.map((i) => i.path))].join(', ')}`);
  }
  // esbuild turns `import()` of bundled modules into calls; one left as it is (of a built-in module)
  // would fail in a SEA with a code cache, where `import()` does not work.
  const dynamic = imports.filter((i) => i.external && i.kind === 'dynamic-import');
  if (dynamic.length > 0) {
    throw new Error(
      `the bundle uses import() of ${dynamic.map((i) => i.path).join(', ')}: use require() or a static import`,
    );
  }
}

function isBuiltin(name) {
  return require('node:module').builtinModules.includes(name.split('/')[0]);
}

function makeBlob() {
  fs.writeFileSync(
    CONFIG,
    `${JSON.stringify({ main: BUNDLE, output: BLOB, disableExperimentalSEAWarning: true, useCodeCache: CODE_CACHE, execArgv: EXEC_ARGV }, null, 2)}\n`,
  );
  execFileSync(process.execPath, [...EXEC_ARGV, '--experimental-sea-config', CONFIG], { stdio: 'inherit' });
}

async function inject() {
  const temp = `${BINARY}.${process.pid}.tmp`;
  console.log(`injecting into a copy of ${BASE_NODE} (postject may warn about ".note" sections: harmless)`);
  fs.copyFileSync(BASE_NODE, temp);
  fs.chmodSync(temp, 0o755);
  try {
    strip(temp);
    const { inject: postject } = require('postject');
    await postject(temp, 'NODE_SEA_BLOB', fs.readFileSync(BLOB), { sentinelFuse: FUSE });
    install(temp, BINARY);
    fs.writeFileSync(STAMP, `${JSON.stringify(baseNode())}\n`);
  } finally {
    fs.rmSync(temp, { force: true });
  }
}

/**
 * Removes the symbol tables and debug information from the copy of node (from ~121 to ~104 MiB for
 * the official build of Node 24); what the dynamic linker and native addons need stays. Without
 * a `strip` that knows the binary's format (binutils missing, or another architecture's binary),
 * the binary is built unstripped and this says so.
 */
function strip(file) {
  try {
    execFileSync('strip', [file], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const reason =
      error.code === 'ENOENT' ? 'no `strip` program (binutils)' : String(error.stderr ?? error.message).trim();
    console.warn(`build-binary: not stripped (${reason}); the binary is ~12 MiB larger`);
  }
}

/**
 * Gives the binary its final name, atomically (a half-written binary never has it), as a COPY of
 * what postject wrote. postject writes the whole file at once, and Linux (6.x, ext4) keeps such a
 * file in the page cache in large folios, which are mapped whole into every process that runs it:
 * +10 to 20 MiB of RSS that no code uses. A copy is cached page by page, as a downloaded or
 * installed binary is, so the binary on this machine starts as it will on another.
 */
function install(from, to) {
  const copy = `${to}.${process.pid}.copy`;
  try {
    fs.copyFileSync(from, copy);
    fs.renameSync(copy, to);
  } finally {
    fs.rmSync(copy, { force: true });
  }
}

/** Node's name of the CPU architecture an ELF executable is for (read from its header). */
function elfArch(file) {
  const header = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, header, 0, 20, 0);
  } finally {
    fs.closeSync(fd);
  }
  const machine = { 0x3e: 'x64', 0xb7: 'arm64', 0x28: 'arm', 0xf3: 'riscv64' }[header.readUInt16LE(18)];
  if (!machine) throw new Error(`${file}: not an executable of a known architecture`);
  return machine;
}

/** True when the binary is newer than every file it is made from. */
function upToDate() {
  let built;
  try {
    built = fs.statSync(BINARY).mtimeMs;
  } catch {
    return false;
  }
  const inputs = [
    path.join(AGENT, 'src'),
    path.join(REPO, 'shared', 'src'),
    path.join(AGENT, 'package.json'),
    path.join(REPO, 'pnpm-lock.yaml'),
    fileURLToPath(import.meta.url),
  ];
  let stamp;
  try {
    stamp = fs.readFileSync(STAMP, 'utf8').trim();
  } catch {
    return false;
  }
  return inputs.every((input) => newestMtime(input) < built) && stamp === JSON.stringify(baseNode());
}

/** What identifies the Node binary the executable is made from (an official build's mtime is 1985). */
function baseNode() {
  const { size, mtimeMs } = fs.statSync(BASE_NODE);
  return { path: BASE_NODE, size, mtimeMs, codeCache: CODE_CACHE, version: process.versions.node };
}

function newestMtime(file) {
  const stat = fs.statSync(file, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of fs.readdirSync(file)) newest = Math.max(newest, newestMtime(path.join(file, entry)));
  return newest;
}

main().catch((error) => {
  console.error(`build-binary: ${error?.stack ?? error}`);
  process.exitCode = 1;
});
