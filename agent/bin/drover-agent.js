#!/usr/bin/env node
// The `drover-agent` command as package managers link it. This file is in the repository, so
// `pnpm install` can link it before anything is built; it runs the built CLI, which `pnpm build`
// writes to agent/dist.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!fs.existsSync(main)) {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  process.stderr.write(`drover-agent: not built yet: run \`pnpm build\` in ${root}\n`);
  process.exit(1);
}
await import(main.href);
