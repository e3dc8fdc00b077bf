import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The pinned Node.js 24 (scripts/lib/node-version.sh) that setup fetches on a machine whose node is older. */
export const PINNED_NODE = path.join(
  ROOT,
  '.cache/node',
  `v${/^DROVER_NODE_VERSION=(\S+)/m.exec(fs.readFileSync(path.join(ROOT, 'scripts/lib/node-version.sh'), 'utf8'))![1]}`,
  'bin/node',
);

/**
 * A PATH for the commands of the checkout (`./drover`, ...) as a user's shell has it: its `node`
 * is a Node.js 20 (a stand-in that says so and runs nothing) when setup fetched the pinned
 * Node.js 24, as it does on such a machine; else this Node.js, the machine's own. `dir` receives
 * the `node` of that PATH.
 */
export function userPath(dir: string): { PATH: string; oldNode: boolean } {
  fs.mkdirSync(dir, { recursive: true });
  const node = path.join(dir, 'node');
  const oldNode = fs.existsSync(PINNED_NODE);
  if (oldNode) {
    fs.writeFileSync(
      node,
      '#!/bin/sh\n[ "$1" = --version ] && { echo v20.20.2; exit 0; }\necho "node 20" >&2; exit 1\n',
    );
    fs.chmodSync(node, 0o755);
  } else {
    fs.symlinkSync(process.execPath, node);
  }
  return { PATH: `${dir}:/usr/local/bin:/usr/bin:/bin`, oldNode };
}
