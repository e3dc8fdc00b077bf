/**
 * Builds a command of the workspace as ONE executable file with Node's single executable
 * application support (https://nodejs.org/api/single-executable-applications.html). The agent
 * (`agent/scripts/build-binary.mjs`) and the client command line (`cli/scripts/build-binary.mjs`)
 * are built by it; each script only names its package, its entry and its output.
 *
 * The executables embed the Node.js 24 runtime (`--version` names it). Run by another Node, a
 * build runs itself again with the Node 24 the setup scripts use (the machine's own, else the
 * pinned one in .cache/node, fetched when missing: scripts/lib/node.sh): the blob below only fits
 * the Node version that made it.
 *
 * 1. esbuild bundles the CLI module (which exports `runCli(argv): Promise<number>`), with the
 *    workspace packages taken from their TypeScript sources (the `drover-source` export
 *    condition) and every dependency, into one minified CommonJS file (a SEA's main script runs
 *    as CommonJS: no top-level await, no `require` of files). Commands load what only they use
 *    with `import()`, which esbuild turns into modules evaluated on first use.
 * 2. `node --experimental-sea-config sea-config.json` turns it into a preparation blob, with V8's
 *    code cache of the bundle (`useCodeCache`), so that a start deserializes instead of compiling,
 *    and the V8 options the executable starts with (`execArgv`).
 * 3. A copy of this very `node` binary is stripped of its symbol tables and debug information
 *    (`strip`: the official Node 24 build goes from ~121 to ~104 MiB) and gets the blob injected with postject,
 *    under the resource name NODE_SEA_BLOB, flipping the sentinel fuse
 *    NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2. No code signing on Linux.
 * 4. The result is copied to its final name (see `install` below for why a copy).
 *
 * `--if-stale` skips the build when the binary was made from the same inputs: the content of
 * every file esbuild bundled, the build scripts, the package manifest and lockfile, and the Node
 * binary it was injected into (recorded beside the bundle after each build). Builds of one
 * package take a lock, so that test files building it at the same time build it once.
 *
 * docs/performance.md ("Agent footprint") has the figures behind each step.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const LOCK_WAIT_MS = 5 * 60_000;
/** The major version of Node.js the executables embed. */
export const RUNTIME_MAJOR = 24;

/**
 * The command line every build script takes:
 *   --if-stale       do nothing when the binary was built from the same inputs.
 *   --node <binary>  inject into this Node binary instead of the running one, e.g. the linux-arm64
 *                    build of the SAME Node version, for ARM machines. The blob then has no code
 *                    cache (it would be made by this machine's V8 for this machine's architecture).
 *   --out <file>     where to write the executable (default <package>/dist/<name>).
 *   --archive        also pack the executable as the release archive
 *                    `<name>-<version>-linux-<arch>.tar.xz` beside it (xz: ~1.5 min).
 */
export function parseBuildArgs(argv) {
  const option = (name) => {
    const i = argv.indexOf(name);
    if (i === -1) return undefined;
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--')) throw new Error(`${name} needs a value`);
    return value;
  };
  return {
    ifStale: argv.includes('--if-stale'),
    node: option('--node'),
    out: option('--out'),
    archive: argv.includes('--archive'),
  };
}

/**
 * Builds `<packageDir>/dist/<name>` (or `out`) from `cliModule`, a file of the package exporting
 * `runCli`, started with the V8 options `execArgv`, with esbuild's `define` replacements (the
 * agent's stamped version). Logs what it did; throws on failure.
 */
export async function buildSingleExecutable({
  name,
  packageDir,
  cliModule,
  execArgv = [],
  define = {},
  replace = [],
  ifStale = false,
  node,
  out,
  archive = false,
}) {
  const work = path.join(packageDir, 'dist', 'sea');
  const binary = path.resolve(out ?? path.join(packageDir, 'dist', name));
  const baseNode = fs.realpathSync(node ?? process.execPath);
  const build = {
    name,
    packageDir,
    cliModule,
    binary,
    baseNode,
    work,
    bundle: path.join(work, `${name}.cjs`),
    blob: path.join(work, 'sea-prep.blob'),
    config: path.join(work, 'sea-config.json'),
    inputsFile: path.join(work, `${path.basename(binary)}.inputs.json`),
    // A code cache is made by the running V8, so it only fits a binary of the running Node.
    codeCache: baseNode === fs.realpathSync(process.execPath),
    execArgv,
    define,
    replace,
    require: createRequire(path.join(packageDir, 'package.json')),
  };
  fs.mkdirSync(work, { recursive: true });
  const release = await lock(path.join(work, 'build.lock'));
  try {
    if (ifStale && upToDate(build)) {
      console.log(`${path.relative(REPO, binary)} is up to date`);
    } else {
      const started = Date.now();
      fs.mkdirSync(path.dirname(binary), { recursive: true });
      fs.rmSync(build.inputsFile, { force: true });
      const bundled = await bundle(build);
      makeBlob(build);
      await inject(build);
      recordInputs(build, bundled);
      console.log(`built ${path.relative(REPO, binary)} (${mib(binary)}) in ${seconds(started)}`);
    }
    if (archive) packArchive(build);
  } finally {
    release();
  }
}

const mib = (file) => `${(fs.statSync(file).size / 1024 / 1024).toFixed(1)} MiB`;
const seconds = (started) => `${((Date.now() - started) / 1000).toFixed(1)}s`;

/**
 * Runs a build script's `main`, printing a failure as `build-binary: ...` with exit code 1. Run by
 * another Node than RUNTIME_MAJOR, the script runs itself again with that one instead.
 */
export function runBuildScript(main) {
  if (Number(process.versions.node.split('.')[0]) !== RUNTIME_MAJOR) {
    console.log(`build-binary: this is Node.js ${process.versions.node}; building with Node.js ${RUNTIME_MAJOR}`);
    process.exitCode = rerunWithRuntime();
    return;
  }
  main().catch((error) => {
    console.error(`build-binary: ${error?.stack ?? error}`);
    process.exitCode = 1;
  });
}

/** Runs the build script again with Node RUNTIME_MAJOR (scripts/lib/node.sh finds or fetches it); its exit code. */
function rerunWithRuntime() {
  const script = `DROVER_NODE_MAJOR=${RUNTIME_MAJOR}; . scripts/lib/node.sh && exec node "$@"`;
  const args = ['-c', script, 'build-binary', path.resolve(process.argv[1]), ...process.argv.slice(2)];
  const result = spawnSync('bash', args, { cwd: REPO, stdio: 'inherit' });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

/**
 * The release archive, `<name>-<version>-<os>-<arch>.tar.xz` beside the binary: one directory
 * holding the executable and the repository's LICENSE. xz at its default level: -9 saves ~1% for twice the time.
 */
function packArchive(build) {
  const { version } = JSON.parse(fs.readFileSync(path.join(build.packageDir, 'package.json'), 'utf8'));
  const dir = `${build.name}-${version}-${process.platform}-${elfArch(build.binary)}`;
  const file = path.join(path.dirname(build.binary), `${dir}.tar.xz`);
  if (fs.existsSync(file) && fs.statSync(file).mtimeMs > fs.statSync(build.binary).mtimeMs) {
    console.log(`${path.relative(REPO, file)} is up to date`);
    return;
  }
  const started = Date.now();
  const stage = path.join(build.work, 'archive');
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(path.join(stage, dir), { recursive: true });
  fs.copyFileSync(build.binary, path.join(stage, dir, build.name));
  fs.chmodSync(path.join(stage, dir, build.name), 0o755);
  fs.copyFileSync(path.join(REPO, 'LICENSE'), path.join(stage, dir, 'LICENSE'));
  const temp = `${file}.${process.pid}.tmp`;
  try {
    execFileSync('tar', ['-cJf', temp, '--owner=0', '--group=0', '-C', stage, dir], { stdio: 'inherit' });
    fs.renameSync(temp, file);
  } finally {
    fs.rmSync(temp, { force: true });
    fs.rmSync(stage, { recursive: true, force: true });
  }
  console.log(`archived ${path.relative(REPO, file)} (${mib(file)}) in ${seconds(started)}`);
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

/** The bundle's entry: runs the CLI and sets the exit code (CommonJS: no top-level await). */
const entry = (cliModule) => `
import { runCli } from ${JSON.stringify(`./${path.basename(cliModule)}`)};
runCli(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (error) => { console.error(error); process.exitCode = 1; },
);
`;

/** Bundles the CLI; returns the files it is made of (absolute paths). */
async function bundle(build) {
  const esbuild = build.require('esbuild');
  const result = await esbuild.build({
    stdin: {
      contents: entry(build.cliModule),
      resolveDir: path.dirname(build.cliModule),
      sourcefile: 'sea-entry.ts',
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    target: `node${RUNTIME_MAJOR}`,
    format: 'cjs',
    minify: true,
    // undici's cookie helpers (bundled in the client command line) read `globalThis.Headers` when
    // they load, which makes Node load its own internal copy of undici next to the bundled one
    // (~1 MiB of memory for nothing): the commands never hand them Node's Headers, so that
    // reference is left out.
    define: { 'globalThis.Headers': 'undefined', ...build.define },
    // Workspace packages from their TypeScript sources (no build needed), through the export
    // condition only they publish.
    conditions: ['drover-source'],
    mainFields: ['module', 'main'],
    outfile: build.bundle,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
    plugins: [replacePlugin(build.replace)],
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
  // The entry itself is made here (from `cliModule`, an input); every other input is a file.
  return Object.keys(result.metafile.inputs)
    .map((input) => path.resolve(input))
    .filter((file) => fs.existsSync(file));
}

/**
 * Replaces modules the executable never runs by a few lines of its own, where loading them would
 * cost memory for nothing: `replace` is a list of `{ module, importer, contents }`, `module` the
 * import as written, `importer` a pattern the importing file's path must match (so that only the
 * named packages' imports are replaced), `contents` the CommonJS module put in its place.
 */
function replacePlugin(replace) {
  return {
    name: 'drover-replace',
    setup(esbuild) {
      for (const [index, entry] of replace.entries()) {
        const filter = new RegExp(`^${entry.module.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`);
        esbuild.onResolve({ filter }, (args) =>
          entry.importer.test(args.importer) ? { path: String(index), namespace: 'drover-replaced' } : undefined,
        );
      }
      esbuild.onLoad({ filter: /.*/, namespace: 'drover-replaced' }, (args) => ({
        contents: replace[Number(args.path)].contents,
        loader: 'js',
      }));
    },
  };
}

function isBuiltin(name) {
  return builtinModules.includes(name.split('/')[0]);
}

/** The blob is made with the executable's own V8 options, or V8 would reject its code cache at start. */
function makeBlob(build) {
  const config = {
    main: build.bundle,
    output: build.blob,
    disableExperimentalSEAWarning: true,
    useCodeCache: build.codeCache,
    execArgv: build.execArgv,
  };
  fs.writeFileSync(build.config, `${JSON.stringify(config, null, 2)}\n`);
  execFileSync(process.execPath, [...build.execArgv, '--experimental-sea-config', build.config], { stdio: 'inherit' });
}

async function inject(build) {
  const temp = `${build.binary}.${process.pid}.tmp`;
  console.log(`injecting into a copy of ${build.baseNode} (postject may warn about ".note" sections: harmless)`);
  fs.copyFileSync(build.baseNode, temp);
  fs.chmodSync(temp, 0o755);
  try {
    strip(temp);
    const { inject: postject } = build.require('postject');
    await postject(temp, 'NODE_SEA_BLOB', fs.readFileSync(build.blob), { sentinelFuse: FUSE });
    install(temp, build.binary);
  } finally {
    fs.rmSync(temp, { force: true });
  }
}

/**
 * Removes the symbol tables and debug information from the copy of node (from ~121 to ~104 MiB for
 * the official build of Node 24); what the dynamic linker and native addons need stays. A binary
 * of this machine's architecture is stripped by `strip`, one of another by `<triplet>-strip`
 * (Debian's binutils-aarch64-linux-gnu, for example). Without a `strip` that knows the binary's
 * format, the binary is built unstripped and this says so.
 */
function strip(file) {
  const arch = elfArch(file);
  const triplet = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' }[arch];
  const tools = [...(arch === process.arch ? ['strip'] : []), ...(triplet ? [`${triplet}-strip`] : [])];
  let reason = `no ${tools.join(' or ') || 'strip'} program (binutils)`;
  for (const tool of tools) {
    try {
      execFileSync(tool, [file], { stdio: ['ignore', 'ignore', 'pipe'] });
      return;
    } catch (error) {
      if (error.code !== 'ENOENT') {
        reason = String(error.stderr ?? error.message).trim();
        break;
      }
    }
  }
  console.warn(`build-binary: not stripped (${reason}); the binary is ~12 MiB larger`);
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

/** Files whose content makes the binary besides the bundled ones. */
function fixedInputs(build) {
  return [
    path.join(build.packageDir, 'package.json'),
    path.join(REPO, 'pnpm-lock.yaml'),
    fileURLToPath(import.meta.url),
    process.argv[1] ? path.resolve(process.argv[1]) : undefined,
  ].filter((file) => file !== undefined);
}

/** What the binary is made from: a key over the Node binary and every input file's path and content. */
function inputsKey(build, files) {
  const hash = createHash('sha256');
  const node = fs.statSync(build.baseNode);
  hash.update(
    `${build.baseNode}\0${node.size}\0${node.mtimeMs}\0${process.version}\0${build.codeCache}\0${build.execArgv.join(' ')}\0${JSON.stringify(build.define)}\0`,
  );
  for (const file of [...new Set(files)].sort()) {
    hash.update(`${file}\0`);
    hash.update(fs.readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex');
}

function recordInputs(build, bundled) {
  const files = [...bundled, ...fixedInputs(build)];
  const record = { binary: build.binary, baseNode: build.baseNode, key: inputsKey(build, files), files };
  fs.writeFileSync(build.inputsFile, `${JSON.stringify(record, null, 2)}\n`);
}

/** True when the binary exists and its recorded inputs are unchanged. */
function upToDate(build) {
  if (!fs.existsSync(build.binary)) return false;
  let record;
  try {
    record = JSON.parse(fs.readFileSync(build.inputsFile, 'utf8'));
  } catch {
    return false;
  }
  try {
    return record.binary === build.binary && record.key === inputsKey(build, record.files);
  } catch {
    return false; // an input is gone
  }
}

/** Takes `file` as an exclusive lock (waiting while a live process holds it); returns its release. */
async function lock(file) {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(file, { force: true });
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    const holder = lockHolder(file);
    if (holder === 'gone') continue;
    if (!isAlive(holder)) {
      fs.rmSync(file, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${file} is held by process ${holder} for too long`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The pid in a lock file; 'gone' when it was released meanwhile; -1 for a file just made (not written yet). */
function lockHolder(file) {
  try {
    const text = fs.readFileSync(file, 'utf8').trim();
    if (text !== '') return Number(text);
    return Date.now() - fs.statSync(file).mtimeMs < 10_000 ? -1 : 0;
  } catch (error) {
    if (error.code === 'ENOENT') return 'gone';
    throw error;
  }
}

function isAlive(pid) {
  if (pid === -1) return true;
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}
