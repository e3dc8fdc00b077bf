import fs from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector/promises';

/**
 * CPU profiling of the servers under test (they run in this process). `--profile <file>` in a
 * benchmark writes a `.cpuprofile` (open it in Chrome DevTools, Performance tab) and prints the
 * functions where the time went, by self time and by inclusive time.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  /** When profiling began, µs of the monotonic clock (the clock of `process.hrtime`, in any process). */
  startTime?: number;
  /** The µs between one sample and the previous one (the first: since `startTime`). */
  timeDeltas?: number[];
}

export async function withCpuProfile<T>(file: string | undefined, run: () => Promise<T>): Promise<T> {
  if (!file) return run();
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    const result = await run();
    const { profile } = await session.post('Profiler.stop');
    fs.writeFileSync(file, JSON.stringify(profile));
    console.log(`CPU profile written to ${file}`);
    console.log(summarizeProfile(profile as CpuProfile));
    return result;
  } finally {
    session.disconnect();
  }
}

/** The `top` functions by self and by inclusive share of the samples. */
export function summarizeProfile(profile: CpuProfile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hits = new Map<number, number>();
  for (const s of profile.samples) hits.set(s, (hits.get(s) ?? 0) + 1);
  const label = (n: ProfileNode) => {
    const where = n.callFrame.url
      .replace(/^.*node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?/, '')
      .replace(/^.*\/(coordinator|shared|agent)\/src\//, '$1/src/');
    return `${n.callFrame.functionName || '(anonymous)'} ${where}`.trim();
  };
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, count] of hits) {
    const node = byId.get(id)!;
    self.set(label(node), (self.get(label(node)) ?? 0) + count);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const key = label(byId.get(cur)!);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + count);
    }
  }
  const total = profile.samples.length;
  const list = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => `  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`)
      .join('\n');
  return `self time:\n${list(self)}\ninclusive time:\n${list(inclusive)}`;
}

/**
 * The share of the samples spent inside code whose URL `inside` accepts (its callees included),
 * of all samples and of the busy ones (idle left out): what one part of the server costs.
 */
export function inclusiveShare(profile: CpuProfile, inside: (url: string) => boolean): { all: number; busy: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  let hit = 0;
  let idle = 0;
  for (const id of profile.samples) {
    if (byId.get(id)!.callFrame.functionName === '(idle)') idle += 1;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      if (inside(byId.get(cur)!.callFrame.url)) {
        hit += 1;
        break;
      }
    }
  }
  const total = profile.samples.length;
  return { all: hit / total, busy: hit / Math.max(1, total - idle) };
}

/**
 * The profile cut to the samples taken within `windows` (µs of the monotonic clock, as
 * `process.hrtime.bigint() / 1000n` reads it in any process): a child's whole-life profile
 * (`--cpu-prof`) summarized over the moments a benchmark measured.
 */
export function profileWithin(profile: CpuProfile, windows: readonly { from: number; to: number }[]): CpuProfile {
  if (profile.startTime === undefined || !profile.timeDeltas) throw new Error('the profile has no sample times');
  const samples: number[] = [];
  let at = profile.startTime;
  profile.samples.forEach((sample, i) => {
    at += profile.timeDeltas![i]!;
    if (windows.some((w) => at >= w.from && at <= w.to)) samples.push(sample);
  });
  return { nodes: profile.nodes, samples };
}

/** The monotonic clock in µs, as CPU profiles stamp their samples (`profileWithin`). */
export const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n);

/** The newest `.cpuprofile` in `dir` (a child's `--cpu-prof-dir`, written when it stopped), if any. */
export function newestCpuProfile(dir: string): string | undefined {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(dir, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
}

/** A `.cpuprofile` written by `withCpuProfile`. */
export function readCpuProfile(file: string): CpuProfile {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
}

/**
 * For each label, the share of the samples spent inside a function its predicate accepts (its
 * callees included), of all samples and of the busy ones (idle left out).
 */
export function inclusiveShareOfFunctions(
  profile: CpuProfile,
  functions: Record<string, (frame: ProfileNode['callFrame']) => boolean>,
): Record<string, { all: number; busy: number }> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hits = Object.fromEntries(Object.keys(functions).map((label) => [label, 0]));
  let idle = 0;
  for (const id of profile.samples) {
    if (byId.get(id)!.callFrame.functionName === '(idle)') idle += 1;
    for (const [label, match] of Object.entries(functions)) {
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        if (match(byId.get(cur)!.callFrame)) {
          hits[label]! += 1;
          break;
        }
      }
    }
  }
  const total = profile.samples.length;
  return Object.fromEntries(
    Object.entries(hits).map(([label, hit]) => [label, { all: hit / total, busy: hit / Math.max(1, total - idle) }]),
  );
}
