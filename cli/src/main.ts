#!/usr/bin/env node
// First: V8's options before undici loads.
import './start-flags.js';
import { runCli } from './program.js';

// `pnpm -s drover ...` runs in the repository's root: paths on the command line are the caller's.
if (process.env.npm_lifecycle_event === 'drover' && process.env.INIT_CWD) process.chdir(process.env.INIT_CWD);

process.exitCode = await runCli(process.argv.slice(2));
