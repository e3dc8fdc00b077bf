/**
 * `pnpm package`: the Debian packages of the agent and the coordinator, for amd64 and arm64, in
 * dist/packages/ (docs/install.md). Run through scripts/package.sh, which makes sure of Node.js 24
 * and dpkg-deb first.
 *
 *   pnpm package [--arch amd64|arm64]... [--no-build] [--fast] [--out <dir>]
 *     --arch      only this architecture (repeatable; default both)
 *     --no-build  use the build that is there (`pnpm build` is run otherwise)
 *     --fast      gzip -1 instead of xz: a package in seconds instead of a minute (tests)
 *     --out       where to write the packages (default dist/packages)
 *
 * Builds every package it can; one it cannot is named with the reason, and the exit status is 1.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { agentVersion, stageAgent } from './agent-package.js';
import { coordinatorVersion, deployCoordinator, stageCoordinator } from './coordinator-package.js';
import { buildDeb, ROOT, type Compression, type DebPackage } from './deb.js';
import { DEB_ARCHES, type DebArch } from './elf.js';
import { officialNode } from './node-runtime.js';

interface Options {
  arches: DebArch[];
  build: boolean;
  compression: Compression;
  out: string;
}

function parseArgs(argv: string[]): Options {
  const options: Options = { arches: [], build: true, compression: 'xz', out: path.join(ROOT, 'dist/packages') };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--arch') {
      const arch = argv[++i];
      if (!DEB_ARCHES.includes(arch as DebArch)) {
        throw new UsageError(`--arch expects ${DEB_ARCHES.join(' or ')}, got ${JSON.stringify(arch ?? '')}`);
      }
      options.arches.push(arch as DebArch);
    } else if (arg === '--no-build') options.build = false;
    else if (arg === '--fast') options.compression = 'gzip';
    else if (arg === '--out') {
      const out = argv[++i];
      if (!out) throw new UsageError('--out expects a directory');
      options.out = path.resolve(out);
    } else throw new UsageError(`unknown argument ${JSON.stringify(arg)} (--arch, --no-build, --fast, --out)`);
  }
  if (options.arches.length === 0) options.arches = [...DEB_ARCHES];
  return options;
}

class UsageError extends Error {}

const mib = (file: string) => `${(fs.statSync(file).size / 1024 / 1024).toFixed(1)} MiB`;

function main(argv: string[]): number {
  let options: Options;
  try {
    options = parseArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`package: ${error.message}`);
    return 2;
  }
  if (options.build) execFileSync('pnpm', ['build'], { cwd: ROOT, stdio: 'inherit' });

  const nodeVersion = process.versions.node;
  const work = path.join(options.out, '.build');
  fs.rmSync(work, { recursive: true, force: true });
  const missing: string[] = [];
  let deployed: string | undefined;
  try {
    for (const arch of options.arches) {
      let runtime: string;
      try {
        runtime = officialNode(ROOT, arch, nodeVersion);
      } catch (error) {
        const why = `no Node.js ${nodeVersion} runtime for ${arch}: ${(error as Error).message}`;
        missing.push(`drover-agent_${agentVersion()}_${arch}.deb (${why})`);
        missing.push(`drover-coordinator_${coordinatorVersion()}_${arch}.deb (${why})`);
        continue;
      }
      const packages: { file: string; stage: (dir: string) => DebPackage }[] = [
        {
          file: `drover-agent_${agentVersion()}_${arch}.deb`,
          stage: (dir) => stageAgent(dir, arch, agentVersion(), runtime),
        },
        {
          file: `drover-coordinator_${coordinatorVersion()}_${arch}.deb`,
          stage: (dir) => {
            if (deployed === undefined) {
              const dir = path.join(work, 'coordinator-deploy');
              deployCoordinator(dir);
              deployed = dir; // only once complete: a failed deploy is tried again for the next architecture
            }
            return stageCoordinator(dir, arch, coordinatorVersion(), deployed, runtime);
          },
        },
      ];
      for (const { file, stage } of packages) {
        const dir = path.join(work, file.replace(/\.deb$/, ''));
        try {
          const started = Date.now();
          const pkg = stage(dir);
          const out = buildDeb(dir, pkg, options.out, options.compression);
          console.log(
            `package: built ${path.relative(ROOT, out)} (${mib(out)}) in ${((Date.now() - started) / 1000).toFixed(1)}s`,
          );
        } catch (error) {
          missing.push(`${file} (${(error as Error).message})`);
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
        }
      }
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  for (const line of missing) console.error(`package: NOT BUILT: ${line}`);
  return missing.length > 0 ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
