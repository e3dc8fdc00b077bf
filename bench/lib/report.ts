import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import type { LoadResult } from './load.js';

/** Plain-text output of a benchmark: one row per measured target, then the ratio to the goal. */

export function machineNote(): string {
  return `${os.cpus().length} vCPU (${os.cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.versions.node}, ${new Date().toISOString().slice(0, 10)}`;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function formatRow(label: string, r: LoadResult): string {
  const rps = Math.round(r.requestsPerSecond).toLocaleString('en-US').padStart(8);
  return `${label.padEnd(40)} ${rps} req/s   p50 ${String(r.p50).padStart(3)} ms   p99 ${String(r.p99).padStart(3)} ms   server CPU ${r.serverCpuMicrosPerRequest.toFixed(1).padStart(5)} µs/req   (${r.total.toLocaleString('en-US')} requests)`;
}

/** Prints the ratio of the medians and whether it meets the goal; returns the ratio. */
export function printRatio(
  label: string,
  subject: readonly LoadResult[],
  baseline: readonly LoadResult[],
  goal: number,
): number {
  const ratio = median(subject.map((r) => r.requestsPerSecond)) / median(baseline.map((r) => r.requestsPerSecond));
  const cpuRatio =
    median(baseline.map((r) => r.serverCpuMicrosPerRequest)) / median(subject.map((r) => r.serverCpuMicrosPerRequest));
  const verdict = ratio >= goal ? 'meets' : 'BELOW';
  console.log(`${label}: ${ratio.toFixed(2)} x baseline req/s (goal >= ${goal}; ${verdict} the goal)`);
  console.log(`${label}: ${cpuRatio.toFixed(2)} x baseline by server CPU per request (baseline CPU / subject CPU)`);
  return ratio;
}

/**
 * With `BENCH_JSON_DIR` set, writes the benchmark's figures to `<dir>/<name>.json` (with the
 * machine and the date) for tools to compare runs; otherwise nothing.
 */
export function writeJsonResult(name: string, result: object): void {
  const dir = process.env.BENCH_JSON_DIR;
  if (!dir) return;
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, `${JSON.stringify({ benchmark: name, machine: machineNote(), ...result }, null, 2)}\n`);
  console.log(`figures written to ${file}`);
}
