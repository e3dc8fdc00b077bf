/**
 * The Node.js versions Drover runs on: 22 from 22.14, and 24 or newer (24 is the one it is
 * developed, tested and built on). The same rule as `engines` in package.json and the setup
 * scripts (scripts/lib/node.sh). No imports: the CLIs check it before loading anything else.
 */
export const SUPPORTED_NODE = 'Node.js 22 (from 22.14) or 24';

/** Whether Drover runs on this Node.js version (`process.versions.node`, without a `v`). */
export function isSupportedNode(version: string): boolean {
  const match = /^v?(\d+)\.(\d+)\./.exec(version);
  if (!match) return false;
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return major >= 24 || (major === 22 && minor >= 14);
}

/**
 * For a command's first lines: `undefined` on a supported Node, otherwise the one line to print
 * instead of starting, e.g. `Node.js 22 (from 22.14) or 24 is required; this is Node.js 20.20.2
 * (/usr/bin/node)`.
 */
export function unsupportedNodeMessage(version: string, execPath: string): string | undefined {
  if (isSupportedNode(version)) return undefined;
  return `${SUPPORTED_NODE} is required; this is Node.js ${version} (${execPath})`;
}

/**
 * What `--version` prints: the program's version and the Node.js runtime running it, e.g.
 * `0.1.0 (Node.js 24.21.0, linux-x64)`; for the agent's single executable, the runtime inside it.
 */
export function versionWithRuntime(version: string): string {
  return `${version} (Node.js ${process.versions.node}, ${process.platform}-${process.arch})`;
}
