import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What each SQLite statement of a child coordinator costs: the SQLite counterpart of
 * PostgreSQL's pg_stat_statements, for a benchmark's `--statements` (a diagnosis: it adds a clock
 * read around every statement). Preloaded into the child (`statementsNodeFlags`), it wraps
 * better-sqlite3's statements (`run`, `get`, `all`, `iterate`) and `exec` before the coordinator
 * prepares any, and counts each SQL text's calls and time (the statement's whole call: SQLite's
 * work and the rows made into objects). On SIGUSR2 it writes the counts to the file named by
 * DROVER_BENCH_STATEMENTS_FILE and starts again from zero (`collectStatements`).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FILE_ENV = 'DROVER_BENCH_STATEMENTS_FILE';

export interface StatementStat {
  sql: string;
  calls: number;
  ms: number;
}

type Method = (this: { source: string }, ...args: unknown[]) => unknown;

function install(file: string): void {
  // The coordinator's own copy of better-sqlite3: the module instance its `import` gets.
  const require = createRequire(path.join(ROOT, 'coordinator/package.json'));
  const Database = require('better-sqlite3') as new (file: string) => {
    prepare(sql: string): object;
    close(): void;
  } & { prototype: Record<string, Method> };
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, Method>;
  probe.close();
  let stats = new Map<string, { calls: number; ms: number }>();
  const count = (sql: string, ms: number) => {
    const s = stats.get(sql);
    if (s) {
      s.calls += 1;
      s.ms += ms;
    } else stats.set(sql, { calls: 1, ms });
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
  process.on('SIGUSR2', () => {
    const rows: StatementStat[] = [...stats].map(([sql, s]) => ({ sql, calls: s.calls, ms: s.ms }));
    stats = new Map();
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(rows));
    fs.renameSync(`${file}.tmp`, file);
  });
}

if (process.env[FILE_ENV]) install(process.env[FILE_ENV]);

/** The child's node flags and environment that preload this module, its counts going to `file`. */
export function statementsPreload(file: string): { nodeFlags: string[]; env: Record<string, string> } {
  return {
    nodeFlags: ['--import', 'tsx', '--import', fileURLToPath(import.meta.url)],
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

/** The costliest statements first: how many per `unit` (a job, a device), their mean time, their total. */
export function printSqliteStatements(stats: readonly StatementStat[], units: number, unit: string, top = 12): void {
  const total = stats.reduce((sum, s) => sum + s.ms, 0);
  console.log(`    SQLite statements: ${total.toFixed(0)} ms in all`);
  for (const s of [...stats].sort((a, b) => b.ms - a.ms).slice(0, top)) {
    console.log(
      `    ${(s.calls / units).toFixed(3).padStart(7)} per ${unit}  ${((s.ms * 1000) / s.calls).toFixed(1).padStart(8)} µs each  ` +
        `${s.ms.toFixed(0).padStart(6)} ms in all  ${s.sql.replace(/\s+/g, ' ').slice(0, 110)}`,
    );
  }
}
