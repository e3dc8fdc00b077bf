import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What each SQLite statement of a coordinator costs: the SQLite counterpart of PostgreSQL's
 * pg_stat_statements, for a benchmark's `--statements` (a diagnosis: it adds two clock reads
 * around every statement). `countStatements` wraps better-sqlite3's statements (`run`, `get`,
 * `all`, `iterate`) and `exec`, and records each SQL text's calls and their times (the
 * statement's whole call: SQLite's work and the rows made into objects), for a coordinator in
 * this process created afterwards (the wrappers are taken when a statement is prepared).
 * Preloaded into a child coordinator (`statementsPreload`), it writes the counts to the file
 * named by DROVER_BENCH_STATEMENTS_FILE on SIGUSR2 and starts again from zero
 * (`collectStatements`).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FILE_ENV = 'DROVER_BENCH_STATEMENTS_FILE';

export interface StatementStat {
  sql: string;
  calls: number;
  ms: number;
  /** Each call's time, ms, in order. */
  samples: number[];
}

type Method = (this: { source: string }, ...args: unknown[]) => unknown;

/** Counts every statement of this process's better-sqlite3 from now on; `take` gives the counts and starts again. */
export function countStatements(): { take(): StatementStat[] } {
  // The coordinator's own copy of better-sqlite3: the module instance its `import` gets.
  const require = createRequire(path.join(ROOT, 'coordinator/package.json'));
  const Database = require('better-sqlite3') as new (file: string) => {
    prepare(sql: string): object;
    close(): void;
  } & { prototype: Record<string, Method> };
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, Method>;
  probe.close();
  let stats = new Map<string, number[]>();
  const count = (sql: string, ms: number) => {
    const samples = stats.get(sql);
    if (samples) samples.push(ms);
    else stats.set(sql, [ms]);
  };
  for (const name of ['run', 'get', 'all'] as const) {
    const original = proto[name]!;
    proto[name] = function (this: { source: string }, ...args: unknown[]) {
      const began = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        count(this.source, performance.now() - began);
      }
    };
  }
  const iterate = proto.iterate!;
  proto.iterate = function* (this: { source: string }, ...args: unknown[]) {
    let spent = 0;
    const rows = iterate.apply(this, args) as Iterator<unknown>;
    try {
      for (;;) {
        const began = performance.now();
        const step = rows.next();
        spent += performance.now() - began;
        if (step.done) return;
        yield step.value;
      }
    } finally {
      count(this.source, spent);
    }
  } as unknown as Method;
  const dbProto = (Database as unknown as { prototype: Record<string, Method> }).prototype;
  const exec = dbProto.exec!;
  dbProto.exec = function (this: { source: string }, ...args: unknown[]) {
    const began = performance.now();
    try {
      return exec.apply(this, args);
    } finally {
      count(String(args[0]), performance.now() - began);
    }
  };
  return {
    take() {
      const rows = [...stats].map(([sql, samples]) => ({
        sql,
        calls: samples.length,
        ms: samples.reduce((a, b) => a + b, 0),
        samples,
      }));
      stats = new Map();
      return rows;
    },
  };
}

const file = process.env[FILE_ENV];
if (file) {
  const counter = countStatements();
  process.on('SIGUSR2', () => {
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(counter.take()));
    fs.renameSync(`${file}.tmp`, file);
  });
}

/**
 * The child's node flags and environment that preload this module (TypeScript: through tsx, which
 * a child run from the sources, `tsx: false`, loads already), its counts going to `file`.
 */
export function statementsPreload(
  file: string,
  { tsx = true }: { tsx?: boolean } = {},
): { nodeFlags: string[]; env: Record<string, string> } {
  return {
    nodeFlags: [...(tsx ? ['--import', 'tsx'] : []), '--import', fileURLToPath(import.meta.url)],
    env: { [FILE_ENV]: file },
  };
}

/** The counts since the last collection (or the start), from the child `pid`; they start again from zero. */
export async function collectStatements(pid: number, file: string): Promise<StatementStat[]> {
  fs.rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  const deadline = performance.now() + 10_000;
  while (!fs.existsSync(file)) {
    if (performance.now() > deadline) throw new Error(`no statement counts from process ${pid} in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return JSON.parse(fs.readFileSync(file, 'utf8')) as StatementStat[];
}

/**
 * The costliest statements first: how many per `unit` (a job, a device), their mean, p50 and p99
 * times, their total.
 */
export function printSqliteStatements(stats: readonly StatementStat[], units: number, unit: string, top = 12): void {
  const total = stats.reduce((sum, s) => sum + s.ms, 0);
  console.log(`    SQLite statements: ${total.toFixed(0)} ms in all`);
  const us = (ms: number) => (ms * 1000).toFixed(1).padStart(8);
  for (const s of [...stats].sort((a, b) => b.ms - a.ms).slice(0, top)) {
    const sorted = [...s.samples].sort((a, b) => a - b);
    const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
    console.log(
      `    ${(s.calls / units).toFixed(3).padStart(7)} per ${unit}  mean ${us(s.ms / s.calls)} µs  p50 ${us(at(50))}  ` +
        `p99 ${us(at(99))}  ${s.ms.toFixed(0).padStart(6)} ms in all  ${s.sql.replace(/\s+/g, ' ').slice(0, 100)}`,
    );
  }
}
