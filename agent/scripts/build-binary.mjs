#!/usr/bin/env node
/**
 * Builds the agent as ONE executable file, `agent/dist/drover-agent`, with Node's single
 * executable application support, from the Node.js 24 runtime (the one the fleet runs;
 * `drover-agent --version` names it): esbuild bundles the CLI (src/cli/program.ts) and its
 * dependencies, Node makes the preparation blob with a code cache, postject injects it into a
 * stripped copy of Node 24. The steps, and why each is done so, are in
 * scripts/lib/single-executable.mjs, shared with the client command line's build.
 *
 * Usage: node agent/scripts/build-binary.mjs [--if-stale] [--node <binary>] [--out <file>] [--archive]
 *                                            [--agent-version <version>]
 *   --if-stale       do nothing when the binary was built from the same inputs (file contents
 *                    and the runtime).
 *   --node <binary>  inject into this Node binary instead of the running one, e.g. the linux-arm64
 *                    build of the SAME Node version, for ARM machines (then without a code cache).
 *   --out <file>     where to write the executable (default agent/dist/drover-agent).
 *   --archive        also pack the executable as the release archive
 *                    `drover-agent-<version>-linux-<arch>.tar.xz` beside it (xz: ~1.5 min).
 *   --agent-version <version>
 *                    the version the binary reports (`--version`, at enrollment and at every
 *                    connect; default the one in src/version.ts), for a release shipped to the
 *                    fleet by self-update (docs/agent.md, "Self-update").
 */
import { fileURLToPath } from 'node:url';
import { buildSingleExecutable, parseBuildArgs, runBuildScript } from '../../scripts/lib/single-executable.mjs';

/**
 * V8 options the agent starts with (the SEA configuration's `execArgv`), measured on the idle
 * daemon (docs/performance.md, "Agent footprint"): no Maglev, the mid-tier JavaScript compiler
 * (~2 MiB of its code pages untouched; the agent's few requests a minute do not need it); no
 * on-stack replacement, so that a loop run once (re2js decoding its Unicode tables when a
 * workflow has a param pattern) is not optimized by TurboFan, whose code pages would then stay
 * touched (~6 MiB); `gc` exposed, for the one memory-reducing collection the daemon makes once it
 * has connected (src/daemon/release-startup-memory.ts: ~4 MiB), which with a bytecode age of 1
 * also drops the bytecode of every function not run since the previous collection (what starting
 * needed once: reading options, enrolling, loading workflows; compiled again if ever called;
 * ~0.7 MiB). Not `--single-threaded` (V8 compiling, marking and sweeping on the main thread
 * only): it saved 0.6-0.9 MiB of the helper threads' allocations, but made a job's dispatch p99
 * 1.25-1.5 x longer (its collections and compiles pause the event loop that starts the job).
 */
const EXEC_ARGV = ['--no-maglev', '--no-use-osr', '--expose-gc', '--bytecode-old-age=1'];

/**
 * What pino loads and the agent never runs, left out of the executable (0.3 to 0.7 MiB of the
 * idle daemon's memory with node:v8 below, docs/performance.md, "Agent footprint"): the agent
 * logs through its own synchronous destination (src/logging/create-logger.ts), never through a
 * transport, which would need a worker thread (`thread-stream`, `worker_threads`), nor through
 * sonic-boom, whose only use of `assert` is a check of its file descriptor.
 */
const PINO = /[\\/]node_modules[\\/](pino|sonic-boom|thread-stream)[\\/]/;
const REPLACE = [
  {
    module: 'thread-stream',
    importer: PINO,
    contents: `module.exports = class ThreadStream {
  constructor() { throw new Error('pino transports run in worker threads, which drover-agent does not start'); }
};`,
  },
  { module: 'worker_threads', importer: PINO, contents: 'module.exports = { isMainThread: true };' },
  {
    module: 'assert',
    importer: PINO,
    contents: `module.exports = function assert(value, message) { if (!value) throw new Error(message); };`,
  },
  // execa checks an `ipcInput` with V8's serializer, an option the agent does not use: node:v8
  // (and the heap and profiler bindings it brings) is loaded only if it ever is.
  {
    module: 'node:v8',
    importer: /[\\/]node_modules[\\/]execa[\\/]/,
    contents: `exports.serialize = (value) => process.getBuiltinModule('node:v8').serialize(value);`,
  },
];

/** The version a binary may be stamped with: what the coordinator takes as an agent's version. */
const VERSION_PATTERN = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/;

/** `--agent-version <version>` as an esbuild `define` of src/version.ts (none: the version there). */
function versionDefine(argv) {
  const i = argv.indexOf('--agent-version');
  if (i === -1) return {};
  const version = argv[i + 1];
  if (version === undefined || !VERSION_PATTERN.test(version)) {
    throw new Error(
      `--agent-version expects 1 to 64 letters, digits, '.', '+', '_' or '-' (starting with a letter or digit), got ${JSON.stringify(version ?? '')}`,
    );
  }
  return { __DROVER_AGENT_VERSION__: JSON.stringify(version) };
}

runBuildScript(() =>
  buildSingleExecutable({
    name: 'drover-agent',
    packageDir: fileURLToPath(new URL('..', import.meta.url)),
    cliModule: fileURLToPath(new URL('../src/cli/program.ts', import.meta.url)),
    execArgv: EXEC_ARGV,
    replace: REPLACE,
    define: versionDefine(process.argv.slice(2)),
    ...parseBuildArgs(process.argv.slice(2)),
  }),
);
