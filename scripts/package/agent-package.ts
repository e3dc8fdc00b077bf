import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { assertArch, libraryDepends, NODE_ARCH, type DebArch } from './elf.js';
import { install, PACKAGING, ROOT, writeDocs, type DebPackage } from './deb.js';

/**
 * The drover-agent package's files: the agent's single executable (agent/scripts/build-binary.mjs,
 * injected into the official Node.js build of the package's architecture), its unit and its
 * environment file (docs/install.md has the layout).
 */

const BUILD_SCRIPT = path.join(ROOT, 'agent/scripts/build-binary.mjs');

/**
 * Builds (or finds up to date) the executable for `arch` at agent/dist/packages/drover-agent-<arch>,
 * stamped with the package's version; answers its path.
 */
function buildBinary(arch: DebArch, version: string, runtime: string): string {
  const out = path.join(ROOT, 'agent/dist/packages', `drover-agent-${NODE_ARCH[arch]}`);
  execFileSync(
    process.execPath,
    [BUILD_SCRIPT, '--if-stale', '--node', path.join(runtime, 'bin/node'), '--agent-version', version, '--out', out],
    { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  return out;
}

/** Stages the agent package for `arch` in `stage`; answers its description for the control file. */
export function stageAgent(stage: string, arch: DebArch, version: string, runtime: string): DebPackage {
  const binary = buildBinary(arch, version, runtime);
  install(binary, stage, 'usr/bin/drover-agent', 0o755);
  install(
    path.join(PACKAGING, 'drover-agent/drover-agent.service'),
    stage,
    'lib/systemd/system/drover-agent.service',
    0o644,
  );
  // Root's only: it may hold a proxy's password.
  install(path.join(PACKAGING, 'drover-agent/agent.env'), stage, 'etc/drover/agent.env', 0o600);
  assertArch(stage, arch);

  const pkg: DebPackage = {
    name: 'drover-agent',
    version,
    arch,
    depends: ['adduser', ...libraryDepends(stage)],
    summary: 'Drover agent: runs the workflows a Drover coordinator sends',
    description: `
The agent of Drover, self-hosted job dispatch, file exchange and over-the-air
deployment for fleets of edge machines. It enrolls the machine with a Drover
coordinator, holds a connection to it, and runs the machine's local workflows
when the coordinator dispatches a job to them.

This package installs the agent as one executable that carries its Node.js
runtime, the system user drover-agent, and the service drover-agent.service,
which starts once the machine is enrolled.`,
    conffiles: ['/etc/drover/agent.env'],
    scriptValues: {
      PACKAGE: 'drover-agent',
      USER: 'drover-agent',
      GECOS: 'Drover agent',
      DATA_DIR: '/var/lib/drover-agent',
      MORE_DIRS: 'make_dir "$DATA_DIR/workflows" # where the workflow files go',
      CONFIG: '/etc/drover/agent.env',
    },
  };
  const help = execFileSync(process.execPath, [path.join(ROOT, 'agent/dist/cli/main.js'), '--help'], {
    encoding: 'utf8',
  });
  writeDocs(
    stage,
    pkg,
    help,
    `/usr/bin/drover-agent carries the Node.js runtime (MIT license and the licenses of the libraries it bundles: /usr/share/doc/drover-agent/LICENSE-nodejs) and the agent's npm dependencies, each under its own license (MIT, ISC).`,
  );
  install(path.join(runtime, 'LICENSE'), stage, 'usr/share/doc/drover-agent/LICENSE-nodejs', 0o644);
  install(
    path.join(PACKAGING, 'drover-agent/lintian-overrides'),
    stage,
    'usr/share/lintian/overrides/drover-agent',
    0o644,
  );
  return pkg;
}

export function agentVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(ROOT, 'agent/package.json'), 'utf8')) as { version: string }).version;
}
