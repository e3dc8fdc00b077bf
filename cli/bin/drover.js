#!/usr/bin/env node
// The `drover` command as package managers link it. This file is in the repository, so
// `pnpm install` can link it before anything is built; it runs the built CLI, which `pnpm build`
// writes to cli/dist.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/main.js', import.meta.url);
if (!fs.existsSync(main)) {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  process.stderr.write(`drover: not built yet: run \`pnpm build\` in ${root}\n`);
  process.exit(1);
}
await import(main.href);
