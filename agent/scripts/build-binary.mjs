#!/usr/bin/env node
/**
 * Builds the agent as ONE executable file, `agent/dist/drover-agent`, with Node's single
 * executable application support: esbuild bundles the CLI (src/cli/program.ts) and its
 * dependencies, Node makes the preparation blob with a code cache, postject injects it into a
 * stripped copy of this Node binary. The steps, and why each is done so, are in
 * scripts/lib/single-executable.mjs, shared with the client command line's build.
 *
 * Usage: node agent/scripts/build-binary.mjs [--if-stale] [--node <binary>] [--out <file>]
 *   --if-stale       do nothing when the binary was built from the same inputs (file contents).
 *   --node <binary>  inject into this Node binary instead of the running one, e.g. the linux-arm64
 *                    build of the SAME Node version, for ARM machines (then without a code cache).
 *   --out <file>     where to write the executable (default agent/dist/drover-agent).
 */
import { fileURLToPath } from 'node:url';
import { buildSingleExecutable, parseBuildArgs, runBuildScript } from '../../scripts/lib/single-executable.mjs';

runBuildScript(() =>
  buildSingleExecutable({
    name: 'drover-agent',
    packageDir: fileURLToPath(new URL('..', import.meta.url)),
    cliModule: fileURLToPath(new URL('../src/cli/program.ts', import.meta.url)),
    ...parseBuildArgs(process.argv.slice(2)),
  }),
);
