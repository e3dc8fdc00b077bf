#!/usr/bin/env node
/**
 * Builds the client command line as ONE executable file, `cli/dist/drover`, the way the agent's
 * is built (scripts/lib/single-executable.mjs has the steps and why).
 *
 * Usage: node cli/scripts/build-binary.mjs [--if-stale] [--node <binary>] [--out <file>]
 *   --if-stale       do nothing when the binary was built from the same inputs (file contents).
 *   --node <binary>  inject into this Node binary instead of the running one (the SAME Node
 *                    version for another architecture; then without a code cache).
 *   --out <file>     where to write the executable (default cli/dist/drover).
 *   --archive        also pack it as the release archive `drover-<version>-linux-<arch>.tar.xz`.
 */
import { fileURLToPath } from 'node:url';
import { buildSingleExecutable, parseBuildArgs, runBuildScript } from '../../scripts/lib/single-executable.mjs';

runBuildScript(() =>
  buildSingleExecutable({
    name: 'drover',
    // V8 options the command starts with (the SEA configuration's `execArgv`): src/start-flags.ts.
    execArgv: ['--liftoff-only'],
    packageDir: fileURLToPath(new URL('..', import.meta.url)),
    cliModule: fileURLToPath(new URL('../src/program.ts', import.meta.url)),
    ...parseBuildArgs(process.argv.slice(2)),
  }),
);
