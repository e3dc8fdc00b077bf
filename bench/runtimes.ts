/**
 * Benchmark: the coordinator on two Node.js runtimes in one run, so that a runtime upgrade is
 * judged on figures taken in the same hour. Goal: no figure worse than on the baseline by more
 * than 5% without a written reason (docs/performance.md, "Node 20 and Node 24").
 *
 *   pnpm build && pnpm --filter @drover/agent build:binary
 *   pnpm bench bench/runtimes.ts --baseline <checkout> [--baseline-node <node>] [--rounds 2] [--settle 10]
 *                                [--only trigger|discovery|dispatch|sync|idle]
 *
 * `--baseline` is another checkout, set up and built (`bash scripts/setup.sh`, then
 * `node agent/scripts/build-binary.mjs`) on the baseline runtime, `--baseline-node` (default
 * /usr/bin/node): for the Node 20 comparison, the last revision that ran on Node 20, whose
 * better-sqlite3 12 is the one that loads there. This checkout runs on the node running this
 * script. Each side runs its own benchmark scripts, so the comparison is of what each revision
 * ships on its runtime. Per round, for each figure, the two sides run one after the other (the
 * order swapped every round):
 *
 * - async trigger run and token discovery: `bench/trigger-run.ts` and `bench/discovery.ts`, one
 *   round each: the coordinator's req/s, its server CPU per request (the bench process's CPU,
 *   which hosts only the servers: steadier than req/s, and independent of autocannon, which runs
 *   on the same runtime as the server it loads) and the ratio to bare Fastify on that runtime;
 * - sync round trip: `bench/sync-roundtrip.ts --binary`, one round: p50 and p99, with that
 *   checkout's agent executable (built from that runtime);
 * - dispatch latency (only with `--only dispatch`): `bench/dispatch-latency.ts --runs 200`, p50
 *   and p99 from the trigger call to the step running, the agent from that checkout's sources;
 * - idle RSS: the built `drover-coordinator start` (with its shebang's flags) on an empty data
 *   directory, after `--settle` seconds, VmRSS read 5 times a second apart (the median).
 *
 * Two revisions on one runtime compare the same way: `--baseline` a worktree of the older
 * revision, `--baseline-node` its `node_modules/.bin/node`. Only what the chosen figures run must
 * be built (the sync round trip: the agent executable; idle RSS: the coordinator).
 *
 * The medians over the rounds are compared at the end.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { shebangNodeFlags } from '../scripts/lib/node-flags.js';
import { sleep } from './lib/agent.js';
import { memoryMb } from './lib/child-coordinator.js';
import { integerOption } from './lib/options.js';
import { machineNote, median } from './lib/report.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const WORSE_PERCENT = 5;

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    'baseline-node': { type: 'string', default: '/usr/bin/node' },
    rounds: { type: 'string', default: '2' },
    settle: { type: 'string', default: '10' },
    only: { type: 'string' },
  },
});
if (!values.baseline) throw new Error('--baseline: expected the directory of another checkout, set up and built');
const rounds = integerOption('rounds', values.rounds, 1);
const settleSeconds = integerOption('settle', values.settle, 0);

interface Side {
  label: string;
  node: string;
  dir: string;
}

function side(node: string, dir: string, what: string): Side {
  const version = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
  if (!version) throw new Error(`${node} does not run`);
  return { label: `Node ${version} (${what})`, node, dir };
}

const sides = [
  side(path.resolve(values['baseline-node']), path.resolve(values.baseline), 'baseline'),
  side(process.execPath, REPO, 'this checkout'),
];

/** Runs one of a checkout's benchmark scripts with its runtime; returns its output. */
function runBench(s: Side, script: string, args: string[]): string {
  const res = spawnSync(s.node, ['--conditions=drover-source', '--import', 'tsx', script, ...args], {
    cwd: s.dir,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (res.status !== 0) throw new Error(`${s.label}: ${script} exited with ${res.status}:\n${res.stdout}${res.stderr}`);
  return res.stdout;
}

/** A figure read from a benchmark's output. */
function read(output: string, pattern: RegExp, what: string): number {
  const match = pattern.exec(output);
  if (!match) throw new Error(`no ${what} in:\n${output}`);
  return Number(match[1]!.replaceAll(',', ''));
}

type Figures = Record<string, number>;

/** trigger-run.ts or discovery.ts: the coordinator row (req/s, server CPU) and the ratio. */
function throughput(s: Side, script: string, name: string): Figures {
  const out = runBench(s, script, ['--rounds', '1']);
  const row = /^coordinator .*?([\d,]+) req\/s .*server CPU\s+([\d.]+) µs\/req/m.exec(out);
  if (!row) throw new Error(`no coordinator row in:\n${out}`);
  return {
    [`${name}: coordinator req/s`]: Number(row[1]!.replaceAll(',', '')),
    [`${name}: server CPU µs per request`]: Number(row[2]),
    [`${name}: ratio to bare Fastify`]: read(out, /^coordinator \/ bare: ([\d.]+) x baseline req\/s/m, 'ratio'),
  };
}

/** dispatch-latency.ts: a real agent (from its sources) runs each job's step; p50 and p99 to the step running. */
function dispatchLatency(s: Side): Figures {
  const out = runBench(s, 'bench/dispatch-latency.ts', ['--runs', '200']);
  return {
    'dispatch latency: p50 ms': read(out, /^p50 ([\d.]+) ms \(goal/m, 'p50'),
    'dispatch latency: p99 ms': read(out, /; p99 ([\d.]+) ms$/m, 'p99'),
  };
}

function syncRoundTrip(s: Side): Figures {
  const out = runBench(s, 'bench/sync-roundtrip.ts', ['--rounds', '1', '--binary']);
  return {
    'sync round trip: p50 ms': read(out, /^p50 ([\d.]+) ms \(goal/m, 'p50'),
    'sync round trip: p99 ms': read(out, /; p99 ([\d.]+) ms$/m, 'p99'),
  };
}

/** The built coordinator, started as its shebang says, idle on an empty data directory. */
async function idleRss(s: Side): Promise<Figures> {
  const main = path.join(s.dir, 'coordinator/dist/cli/main.js');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-bench-runtime-'));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DROVER_')));
  const child = spawn(s.node, [...shebangNodeFlags(main), main, 'start', '--port', '0', '--data-dir', dataDir], {
    cwd: s.dir,
    env: {
      ...env,
      DROVER_BOOTSTRAP_EMAIL: 'bench@example.test',
      DROVER_BOOTSTRAP_PASSWORD: 'bench password',
      DROVER_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        if (/listening on http/.test(out)) resolve();
      });
      void exited.then(() => reject(new Error(`${s.label}: the coordinator exited before listening:\n${out}`)));
    });
    await sleep(settleSeconds * 1000);
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      if (i > 0) await sleep(1000);
      samples.push(memoryMb(child.pid!, 'VmRSS'));
    }
    return { 'coordinator idle RSS MiB': median(samples) };
  } finally {
    child.kill('SIGTERM');
    await exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const allMeasures: {
  key: string;
  name: string;
  /** The built files of each checkout it runs. */
  needs: string[];
  run: (s: Side) => Figures | Promise<Figures>;
}[] = [
  {
    key: 'trigger',
    name: 'async trigger run',
    needs: [],
    run: (s) => throughput(s, 'bench/trigger-run.ts', 'async trigger run'),
  },
  {
    key: 'discovery',
    name: 'token discovery',
    needs: [],
    run: (s) => throughput(s, 'bench/discovery.ts', 'token discovery'),
  },
  { key: 'dispatch', name: 'dispatch latency', needs: [], run: dispatchLatency },
  { key: 'sync', name: 'sync round trip', needs: ['agent/dist/drover-agent'], run: syncRoundTrip },
  { key: 'idle', name: 'idle RSS', needs: ['coordinator/dist/cli/main.js'], run: idleRss },
];
// All but the dispatch latency (the sync round trip covers dispatch too) unless --only names one.
const measures = allMeasures.filter((m) => (values.only === undefined ? m.key !== 'dispatch' : m.key === values.only));
if (measures.length === 0) throw new Error(`--only: expected one of ${allMeasures.map((m) => m.key).join(', ')}`);
for (const s of sides) {
  for (const file of measures.flatMap((m) => m.needs)) {
    if (!fs.existsSync(path.join(s.dir, file))) throw new Error(`${path.join(s.dir, file)} is missing: build it first`);
  }
}

/** Whether a larger value of the figure is better. */
const higherIsBetter = (figure: string) => /req\/s|ratio/.test(figure);

console.log(`coordinator on two runtimes: ${sides.map((s) => `${s.label} in ${s.dir}`).join(' against ')}`);
console.log(`machine: ${machineNote()}; ${rounds} round(s)`);
const taken = sides.map(() => new Map<string, number[]>());
for (let round = 0; round < rounds; round++) {
  for (const measure of measures) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) {
      const figures = await measure.run(sides[i]!);
      for (const [figure, value] of Object.entries(figures)) {
        taken[i]!.set(figure, [...(taken[i]!.get(figure) ?? []), value]);
      }
      const shown = Object.entries(figures).map(([k, v]) => `${k.replace(/^.*?: /, '')} ${v}`);
      console.log(`round ${round + 1}, ${measure.name}, ${sides[i]!.label}: ${shown.join(', ')}`);
    }
  }
}

console.log(`\nmedians over ${rounds} round(s)`);
console.log(`${'figure'.padEnd(44)} ${sides[0]!.label.padStart(30)} ${sides[1]!.label.padStart(30)}   change`);
for (const figure of taken[0]!.keys()) {
  const [before, after] = taken.map((t) => median(t.get(figure)!));
  const change = ((after! - before!) / before!) * 100;
  const worse = higherIsBetter(figure) ? -change : change;
  const mark = worse > WORSE_PERCENT ? `   WORSE by more than ${WORSE_PERCENT}%` : '';
  const sign = change >= 0 ? '+' : '';
  console.log(
    `${figure.padEnd(44)} ${before!.toFixed(2).padStart(30)} ${after!.toFixed(2).padStart(30)}   ${sign}${change.toFixed(1)}%${mark}`,
  );
}
