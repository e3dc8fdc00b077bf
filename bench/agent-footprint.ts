/**
 * Benchmark: the agent's footprint. Goals: the release archive (`.tar.xz`) is at most 30 MB; the
 * single executable is at most 6 MB larger than the stripped Node runtime it embeds; its
 * `drover-agent --version` takes at most 100 ms (median wall time); and the idle daemon
 * (`drover-agent run`, connected, nothing to do) holds less than 60 MiB of RSS.
 *
 *   pnpm build && pnpm bench bench/agent-footprint.ts [--runs 20] [--settle 15] [--binary <file> --runtime <node>] [--pattern]
 *
 * The single executable and its release archive are built first (`agent/scripts/build-binary.mjs
 * --if-stale --archive`: nothing to do when they were made from the same inputs; the archive takes
 * ~1.5 min of xz), unless `--binary` names one to measure instead (e.g. an older build, to compare
 * back to back), which is then packed the same way into a temporary archive; `--runtime` names the
 * Node binary it was made from (default: the one the build recorded, else this node). That
 * runtime is stripped into a temporary copy to give the floor of the size. Sizes on disk are in
 * decimal MB (as release downloads are counted), with MiB beside; RSS in MiB (1,048,576 bytes;
 * /proc counts kB of 1,024 bytes), as the other RSS figures of the benchmarks.
 *
 * Start-up: `--version` of the single executable and of the built JavaScript (`node
 * agent/dist/cli/main.js`), against `node -e 0` as the floor (a bare Node start on this machine
 * now), `--runs` times each in turn after 3 warm-up rounds; the wall time from spawn to exit, as
 * hyperfine measures it. Then, with the daemons below running, `status` and `logs -n 20` of the
 * single executable the same way (no goal: they should cost little more than `--version`).
 *
 * Idle memory: a real coordinator in this process (loopback, temp data directory), an HTTPS
 * proxy in front of it (TLS terminated with a certificate of a private CA made with openssl, as a
 * reverse proxy does in production; left out without openssl), and five child processes: the
 * single executable's daemon over HTTP and over HTTPS (trusting the CA through
 * NODE_EXTRA_CA_CERTS) and over HTTPS through a forward proxy (test/helpers/forward-proxy.ts:
 * HTTPS_PROXY with a user and password, the CA given with `--ca-file`), the built JavaScript's over HTTP (`node agent/dist/cli/main.js run`),
 * each enrolled through `enroll` in its own temp state directory with one workflow (`--pattern`:
 * one whose param has a pattern, so that the daemons load the pattern engine), and a bare
 * `node -e 'setInterval(() => {}, 1e9)'` as the floor. Once the agents are connected with their
 * workflow reported, they idle `--settle` seconds; then VmRSS is read from /proc/<pid>/status once
 * a second for 5 s (the median is the figure), with its anonymous and file-backed parts (RssAnon,
 * RssFile) and the peak since start (VmHWM). The goal is judged on the largest of the executable's
 * three figures.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sleep, startBenchAgent, type BenchAgent } from './lib/agent.js';
import { memoryMb } from './lib/child-coordinator.js';
import { startBenchCoordinator } from './lib/coordinator.js';
import { integerOption } from './lib/options.js';
import { machineNote, median } from './lib/report.js';
import { startForwardProxy, type ForwardProxy } from '../test/helpers/forward-proxy.js';
import { hasOpenssl, startTlsProxy, type TlsProxy } from '../test/helpers/tls-proxy.js';

const GOAL_ARCHIVE_MB = 30;
const GOAL_ABOVE_RUNTIME_MB = 6;
const GOAL_VERSION_MS = 100;
const GOAL_IDLE_RSS_MIB = 60;
const SAMPLES = 5;

const REPO = fileURLToPath(new URL('..', import.meta.url));
const DEFAULT_BINARY = path.join(REPO, 'agent/dist/drover-agent');
const BUILT_MAIN = path.join(REPO, 'agent/dist/cli/main.js');
const PLAIN_WORKFLOW = ['name: hello', 'steps:', '  - run: echo', '    args: ["hello"]', ''].join('\n');
/** `--pattern`: the workflow declares a param with a pattern, so that the daemon loads the pattern engine (re2js). */
const PATTERN_WORKFLOW = [
  'name: hello',
  'params:',
  "  - {name: tag, type: string, pattern: '^v[0-9]+$'}",
  ...PLAIN_WORKFLOW.split('\n').slice(1),
].join('\n');

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    settle: { type: 'string', default: '15' },
    binary: { type: 'string' },
    runtime: { type: 'string' },
    pattern: { type: 'boolean', default: false },
  },
});
const WORKFLOW = values.pattern ? PATTERN_WORKFLOW : PLAIN_WORKFLOW;
const runs = integerOption('runs', values.runs, 1);
const settleSeconds = integerOption('settle', values.settle, 0);
const binary = path.resolve(values.binary ?? DEFAULT_BINARY);

if (!fs.existsSync(BUILT_MAIN)) throw new Error(`${BUILT_MAIN} is missing: run \`pnpm build\` first`);
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-footprint-'));
process.on('exit', () => fs.rmSync(scratch, { recursive: true, force: true }));
let archive: string;
if (values.binary === undefined) {
  const build = spawnSync(
    process.execPath,
    [path.join(REPO, 'agent/scripts/build-binary.mjs'), '--if-stale', '--archive'],
    { cwd: REPO, stdio: 'inherit' },
  );
  if (build.status !== 0) throw new Error(`build-binary.mjs exited with ${build.status}`);
  const built = fs.readdirSync(path.dirname(binary)).filter((f) => /^drover-agent-.*-linux-.*\.tar\.xz$/.test(f));
  if (built.length !== 1) throw new Error(`expected one release archive beside the binary, found ${built.join(', ')}`);
  archive = path.join(path.dirname(binary), built[0]!);
} else if (!fs.existsSync(binary)) {
  throw new Error(`--binary: expected an executable file, got \`${values.binary}\` (not found)`);
} else {
  console.log(`packing ${values.binary} with xz (~1.5 min)`);
  archive = path.join(scratch, 'drover-agent.tar.xz');
  execFileSync('tar', ['-cJf', archive, '-C', path.dirname(binary), path.basename(binary)]);
}

/** The Node binary the executable was made from: --runtime, else what the build recorded, else this node. */
function runtimeOf(): string {
  if (values.runtime !== undefined) return path.resolve(values.runtime);
  if (values.binary === undefined) {
    const record = path.join(path.dirname(binary), 'sea', `${path.basename(binary)}.inputs.json`);
    if (fs.existsSync(record)) return (JSON.parse(fs.readFileSync(record, 'utf8')) as { baseNode: string }).baseNode;
  }
  return process.execPath;
}
const runtime = runtimeOf();
const strippedRuntime = path.join(scratch, 'node');
fs.copyFileSync(runtime, strippedRuntime);
execFileSync('strip', [strippedRuntime]);

const verdict = (met: boolean) => (met ? 'MET' : 'NOT MET');
const mb = (bytes: number) => bytes / 1e6;
const mib = (bytes: number) => bytes / 1024 / 1024;

console.log(`agent footprint: ${path.relative(REPO, binary)}; ${machineNote()}`);

// ---- sizes ----
const size = fs.statSync(binary).size;
const runtimeSize = fs.statSync(runtime).size;
const strippedSize = fs.statSync(strippedRuntime).size;
const archiveSize = fs.statSync(archive).size;
const sizeLine = (label: string, bytes: number) =>
  `  ${label.padEnd(44)} ${mb(bytes).toFixed(1).padStart(6)} MB  (${mib(bytes).toFixed(1)} MiB, ${bytes.toLocaleString('en-US')} bytes)`;
console.log(`\nsizes on disk (runtime: ${runtime})`);
console.log(sizeLine('the Node runtime as published', runtimeSize));
console.log(sizeLine('the same, stripped (strip)', strippedSize));
console.log(sizeLine('the single executable', size));
console.log(sizeLine(`the release archive (${path.basename(archive)})`, archiveSize));

// ---- start-up ----
interface Timed {
  label: string;
  command: readonly string[];
  ms: number[];
}

/** Runs each command `runs` times in turn (after 3 warm-up rounds), timing spawn to exit. */
function timeCommands(commands: readonly Omit<Timed, 'ms'>[]): Timed[] {
  const timed = commands.map((c) => ({ ...c, ms: [] as number[] }));
  for (let round = -3; round < runs; round++) {
    for (const t of timed) {
      const [program, ...args] = t.command;
      const started = process.hrtime.bigint();
      const result = spawnSync(program!, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (result.status !== 0) {
        throw new Error(`\`${t.command.join(' ')}\` exited with ${result.status}:\n${result.stdout}${result.stderr}`);
      }
      if (round >= 0) t.ms.push(ms);
    }
  }
  return timed;
}

function printTimes(timed: readonly Timed[]): void {
  for (const t of timed) {
    const sorted = [...t.ms].sort((a, b) => a - b);
    console.log(
      `  ${t.label.padEnd(44)} median ${median(t.ms).toFixed(1).padStart(6)} ms   min ${sorted[0]!.toFixed(1).padStart(6)} ms   max ${sorted.at(-1)!.toFixed(1).padStart(6)} ms`,
    );
  }
}

console.log(`\nstart-up: wall time from spawn to exit, ${runs} runs each, in turn`);
const startup = timeCommands([
  { label: 'node -e 0 (floor)', command: [process.execPath, '-e', '0'] },
  { label: 'drover-agent --version (single executable)', command: [binary, '--version'] },
  { label: 'node agent/dist/cli/main.js --version', command: [process.execPath, BUILT_MAIN, '--version'] },
]);
printTimes(startup);
const versionMs = median(startup[1]!.ms);
const floorMs = median(startup[0]!.ms);

// ---- idle memory ----
interface Memory {
  rss: number;
  anon: number;
  file: number;
  peak: number;
}

/** VmRSS, its anonymous and file-backed parts, and VmHWM of a process, in MiB. */
function memoryOf(pid: number): Memory {
  return {
    rss: memoryMb(pid, 'VmRSS'),
    anon: memoryMb(pid, 'RssAnon'),
    file: memoryMb(pid, 'RssFile'),
    peak: memoryMb(pid, 'VmHWM'),
  };
}

const bench = await startBenchCoordinator();
const agents: BenchAgent[] = [];
let floor: ChildProcess | undefined;
let proxy: TlsProxy | undefined;
let forwardProxy: ForwardProxy | undefined;
try {
  floor = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], { stdio: 'ignore' });
  const sea = await startBenchAgent(bench, { workflows: { hello: WORKFLOW }, command: [binary] });
  agents.push(sea);
  let seaTls: BenchAgent | undefined;
  let seaProxied: BenchAgent | undefined;
  if (hasOpenssl()) {
    proxy = await startTlsProxy(bench.url);
    seaTls = await startBenchAgent(bench, {
      workflows: { hello: WORKFLOW },
      command: [binary],
      url: proxy.url,
      env: { NODE_EXTRA_CA_CERTS: proxy.caFile },
    });
    agents.push(seaTls);
    // The same behind a site's forward proxy (CONNECT, Basic auth), the CA given with --ca-file.
    forwardProxy = await startForwardProxy({ auth: { user: 'bench', password: 'bench' } });
    const caFile = ['--ca-file', proxy.caFile];
    try {
      seaProxied = await startBenchAgent(bench, {
        workflows: { hello: WORKFLOW },
        command: [binary],
        url: proxy.url,
        env: { HTTPS_PROXY: forwardProxy.urlWith('bench', 'bench'), https_proxy: '', NO_PROXY: '', no_proxy: '' },
        enrollArgs: caFile,
        runArgs: caFile,
      });
      agents.push(seaProxied);
    } catch (error) {
      // A `--binary` from before proxy support has no --ca-file.
      console.log(`\nthe daemon through a forward proxy is not measured: ${(error as Error).message.split('\n')[0]}`);
    }
  } else {
    console.log('\nno openssl: the daemon over HTTPS is not measured');
  }
  const built = await startBenchAgent(bench, {
    workflows: { hello: WORKFLOW },
    command: [process.execPath, BUILT_MAIN],
  });
  agents.push(built);

  console.log('\nwith both daemons connected: commands of the single executable');
  printTimes(
    timeCommands([
      { label: 'drover-agent status', command: [binary, 'status', '--state-dir', sea.stateDir] },
      { label: 'drover-agent logs -n 20', command: [binary, 'logs', '--state-dir', sea.stateDir, '-n', '20'] },
    ]),
  );

  const processes = [
    { label: 'bare node (floor)', pid: floor.pid! },
    { label: 'drover-agent run (single executable)', pid: sea.child.pid! },
    ...(seaTls ? [{ label: 'the same over HTTPS', pid: seaTls.child.pid! }] : []),
    ...(seaProxied ? [{ label: 'HTTPS via a proxy, --ca-file', pid: seaProxied.child.pid! }] : []),
    { label: 'node agent/dist/cli/main.js run', pid: built.child.pid! },
  ];
  console.log(`\nidle memory: connected, then ${settleSeconds} s idle, then ${SAMPLES} samples 1 s apart`);
  await sleep(settleSeconds * 1000);
  const samples = new Map(processes.map((p) => [p.pid, [] as Memory[]]));
  for (let i = 0; i < SAMPLES; i++) {
    if (i > 0) await sleep(1000);
    for (const p of processes) samples.get(p.pid)!.push(memoryOf(p.pid));
  }
  const idle = new Map<number, number>();
  for (const p of processes) {
    const taken = samples.get(p.pid)!;
    const rss = median(taken.map((m) => m.rss));
    idle.set(p.pid, rss);
    const last = taken.at(-1)!;
    console.log(
      `  ${p.label.padEnd(38)} VmRSS ${rss.toFixed(1).padStart(5)} MiB (${mb(rss * 1024 * 1024).toFixed(1)} MB)   anonymous ${last.anon.toFixed(1).padStart(5)} MiB   file-backed ${last.file.toFixed(1).padStart(5)} MiB   peak ${last.peak.toFixed(1).padStart(5)} MiB`,
    );
  }
  const idleRss = Math.max(
    idle.get(sea.child.pid!)!,
    seaTls ? idle.get(seaTls.child.pid!)! : 0,
    seaProxied ? idle.get(seaProxied.child.pid!)! : 0,
  );

  console.log('\ngoals');
  console.log(
    `  release archive <= ${GOAL_ARCHIVE_MB} MB: ${mb(archiveSize).toFixed(1)} MB: ${verdict(mb(archiveSize) <= GOAL_ARCHIVE_MB)}`,
  );
  const above = mb(size - strippedSize);
  console.log(
    `  executable <= stripped runtime + ${GOAL_ABOVE_RUNTIME_MB} MB: ${above.toFixed(2)} MB above (${mb(size).toFixed(1)} against ${mb(strippedSize).toFixed(1)} MB): ${verdict(above <= GOAL_ABOVE_RUNTIME_MB)}`,
  );
  console.log(
    `  --version <= ${GOAL_VERSION_MS} ms (median): ${versionMs.toFixed(1)} ms: ${verdict(versionMs <= GOAL_VERSION_MS)}` +
      `   (the floor, node -e 0: ${floorMs.toFixed(1)} ms; the agent's own share ${(versionMs - floorMs).toFixed(1)} ms)`,
  );
  console.log(
    `  idle RSS < ${GOAL_IDLE_RSS_MIB} MiB${seaTls ? ' (HTTP, HTTPS, HTTPS through a proxy)' : ''}: ${idleRss.toFixed(1)} MiB: ${verdict(idleRss < GOAL_IDLE_RSS_MIB)}` +
      `   (the floor, bare node: ${idle.get(floor.pid!)!.toFixed(1)} MiB)`,
  );
} finally {
  await Promise.allSettled(agents.map((a) => a.close()));
  floor?.kill('SIGKILL');
  await proxy?.close();
  await forwardProxy?.close();
  await bench.close();
}
