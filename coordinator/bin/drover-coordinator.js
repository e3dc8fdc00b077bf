#!/usr/bin/env -S node --max-semi-space-size=4
// The `drover-coordinator` command as package managers link it. This file is in the repository,
// so `pnpm install` can link it before anything is built; it runs the built CLI, which
// `pnpm build` writes to coordinator/dist. Its Node flags are those of the CLI's own first line.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!fs.existsSync(main)) {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  process.stderr.write(`drover-coordinator: not built yet: run \`pnpm build\` in ${root}\n`);
  process.exit(1);
}
await import(main.href);
