import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Builds of the drover-agent single executable for the tests (the self-update tests need several
 * versions): each is a real build (esbuild, the blob, postject; about 5 s), skipped when the
 * binary was made from the same inputs.
 */

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BUILD_SCRIPT = path.join(REPO, 'agent/scripts/build-binary.mjs');
const LIBRARY = path.join(REPO, 'scripts/lib/single-executable.mjs');
/** Where the test builds go (their file names differ: a build's record of its inputs is kept by file name). */
export const TEST_BUILDS = path.join(REPO, 'agent/dist/test');

/** The agent as `pnpm --filter @drover/agent build:binary` builds it: agent/dist/drover-agent. */
export const AGENT_BINARY = path.join(REPO, 'agent/dist/drover-agent');

function node(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd: REPO, timeout: 240_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`build failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolve();
    });
  });
}

/** agent/dist/drover-agent, built unless up to date. */
export async function buildAgentBinary(): Promise<string> {
  await node([BUILD_SCRIPT, '--if-stale']);
  return AGENT_BINARY;
}

/** The agent stamped with another version (`--agent-version`), at agent/dist/test/drover-agent-<version>. */
export async function buildAgentVersion(version: string): Promise<string> {
  const out = path.join(TEST_BUILDS, `drover-agent-${version}`);
  await node([BUILD_SCRIPT, '--if-stale', '--agent-version', version, '--out', out]);
  return out;
}

/**
 * The agent stamped `version` whose request signatures are broken (fixtures/unconnectable-agent.ts):
 * it starts, then never connects to the coordinator.
 */
export async function buildUnconnectableAgent(version: string): Promise<string> {
  const out = path.join(TEST_BUILDS, `drover-agent-${version}-unconnectable`);
  const script = `
    import { buildSingleExecutable } from ${JSON.stringify(pathToFileURL(LIBRARY).href)};
    await buildSingleExecutable({
      name: 'drover-agent',
      packageDir: ${JSON.stringify(path.join(REPO, 'agent'))},
      cliModule: ${JSON.stringify(fileURLToPath(new URL('./fixtures/unconnectable-agent.ts', import.meta.url)))},
      execArgv: ['--no-maglev', '--no-use-osr', '--expose-gc'],
      define: { __DROVER_AGENT_VERSION__: ${JSON.stringify(JSON.stringify(version))} },
      ifStale: true,
      out: ${JSON.stringify(out)},
    });`;
  await node(['--input-type=module', '-e', script]);
  return out;
}
