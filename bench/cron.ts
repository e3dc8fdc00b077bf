/**
 * Benchmark: 10,000 enabled cron triggers due on the same minute. Goals: the lateness from the
 * scheduled instant to each job's insert (committed, visible to another connection) has p99 under
 * 1 s and max under 2 s; while no occurrence is due, the coordinator is near idle (no polling of
 * the triggers table).
 *
 *   pnpm bench bench/cron.ts [--triggers 10000] [--lead 45] [--source] [--profile <dir>]
 *
 * The triggers are seeded into a fresh data directory (one org, one enrolled agent that never
 * connects, one workflow with a params schema; each trigger `<m> <h> * * *` in UTC with fixed
 * params, the default policies) for the first minute at least `--lead` seconds away. Then the
 * real `drover-coordinator start` runs in a child process on that directory (log level warn).
 * Its CPU time (/proc) is read over the idle window, from 2 s after it listens to 2 s before the
 * minute; from 1 s before the minute, this process polls the number of jobs every 2 ms over
 * its own read-only SQLite connection, and each job's lateness is the first poll that saw it
 * minus the minute (2 ms resolution). Results go to docs/performance.md by hand.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { createCoordinator, createLogger, loadConfig } from '@drover/coordinator';
import { cpuTimeMs, startChildCoordinator } from './lib/child-coordinator.js';
import { formatLatency, summarize } from './lib/latency.js';
import { integerOption } from './lib/options.js';
import { summarizeProfile } from './lib/profile.js';
import { machineNote } from './lib/report.js';
import { seedAgent } from './lib/seed.js';

const { values } = parseArgs({
  options: {
    triggers: { type: 'string', default: '10000' },
    lead: { type: 'string', default: '45' },
    source: { type: 'boolean', default: false },
    profile: { type: 'string' },
  },
});
const triggerCount = integerOption('--triggers', values.triggers, 1);
const leadMs = integerOption('--lead', values.lead, 10) * 1000;
const MINUTE = 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// 1. Seed the data directory with a coordinator built in this process, then close it.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-bench-cron-'));
const due = Math.ceil((Date.now() + leadMs) / MINUTE) * MINUTE;
const dueDate = new Date(due);
const expression = `${dueDate.getUTCMinutes()} ${dueDate.getUTCHours()} * * *`;
const config = loadConfig(
  { DROVER_BOOTSTRAP_EMAIL: 'bench@example.test', DROVER_BOOTSTRAP_PASSWORD: 'bench password' },
  { port: '0', host: '127.0.0.1', dataDir, logLevel: 'warn' },
);
const seeding = await createCoordinator(config, createLogger(config.logLevel));
// The better-sqlite3 class, for this process's read-only connection (the bench has no SQLite of its own).
const Database = seeding.db.constructor as new (
  file: string,
  options: { readonly: boolean },
) => { prepare(sql: string): { pluck(): { get(): unknown } }; close(): void };
const dbFile = seeding.db.name;
{
  const { repos } = seeding.ctx;
  const owner = await repos.users.findByEmail('bench@example.test');
  const orgId = (await repos.orgs.listForUser(owner!.id))[0]!.id;
  const agentId = await seedAgent(seeding, orgId, 0, [
    {
      name: 'report',
      paramsSchema: [
        { name: 'env', type: 'enum', options: ['staging', 'prod'], required: true },
        { name: 'depth', type: 'number', min: 1, max: 10, default: 3 },
      ],
      steps: [{ run: './report.sh' }],
    },
  ]);
  const at = new Date().toISOString();
  seeding.db.exec('BEGIN');
  for (let i = 0; i < triggerCount; i++) {
    void repos.triggers.insert({
      id: randomUUID(),
      orgId,
      name: `report ${i}`,
      type: 'cron',
      agentId,
      agentSelector: null,
      fanout: null,
      maxParallel: null,
      scopeType: 'workflow',
      workflowName: 'report',
      responseMode: 'async',
      responseTimeoutMs: 30_000,
      allowedRefs: null,
      allowDebug: false,
      notifyProvider: null,
      notifyTeamId: null,
      notifyChannelId: null,
      notifyOn: 'none',
      cronExpression: expression,
      cronTimezone: 'UTC',
      cronEnabled: true,
      cronMissedPolicy: 'skip',
      cronOverlapPolicy: 'skip',
      params: { env: 'prod' },
      ref: null,
      cronSince: at,
      chatTeamId: null,
      chatChannelId: null,
      chatKeyword: null,
      chatAllowedUserIds: null,
      createdBy: owner!.id,
      createdAt: at,
      updatedAt: at,
    });
  }
  seeding.db.exec('COMMIT');
}
await seeding.close();
console.log(
  `${triggerCount.toLocaleString('en-US')} cron triggers \`${expression}\` (UTC), due ${dueDate.toISOString()}`,
);

// 2. The real coordinator in a child process.
// --profile: the child writes a V8 CPU profile into <dir> when it stops (open it in Chrome DevTools).
const profileDir = values.profile === undefined ? undefined : path.resolve(values.profile);
const coordinator = await startChildCoordinator({
  dataDir,
  source: values.source,
  ...(profileDir ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
});
const reader = new Database(dbFile, { readonly: true });
try {
  const startedAt = Date.now();
  if (due - startedAt < 8_000) throw new Error('the coordinator started too close to the minute: raise --lead');
  await sleep(2_000);
  const idleFrom = { wall: Date.now(), cpu: cpuTimeMs(coordinator.pid) };
  await sleep(due - 2_000 - Date.now());
  const idleTo = { wall: Date.now(), cpu: cpuTimeMs(coordinator.pid) };

  // 3. Watch the jobs appear.
  await sleep(due - 1_000 - Date.now());
  // The newest job's creation number: every job of this data directory is a cron job, so it is
  // their count, read in O(log n) (count(*) would scan the table at every poll).
  const count = reader.prepare('SELECT coalesce(max(seq), 0) FROM jobs').pluck();
  const burstCpu = cpuTimeMs(coordinator.pid);
  const lateness: number[] = [];
  let seen = 0;
  const deadline = due + 30_000;
  while (seen < triggerCount && Date.now() < deadline) {
    const now = Date.now();
    const total = Number(count.get());
    for (; seen < total; seen++) lateness.push(now - due);
    await sleep(2);
  }
  const burstCpuMs = cpuTimeMs(coordinator.pid) - burstCpu;
  const idleMs = idleTo.wall - idleFrom.wall;
  const idleCpuMs = idleTo.cpu - idleFrom.cpu;

  console.log(machineNote());
  console.log(
    `idle: ${idleCpuMs} ms of CPU over ${(idleMs / 1000).toFixed(1)} s (${((100 * idleCpuMs) / idleMs).toFixed(2)} % of one core; /proc ticks of 10 ms)`,
  );
  console.log(formatLatency(`lateness, scheduled instant → job committed`, summarize(lateness)));
  console.log(
    `jobs: ${seen.toLocaleString('en-US')} of ${triggerCount.toLocaleString('en-US')}; CPU from 1 s before the minute to the last job: ${burstCpuMs} ms`,
  );
} finally {
  reader.close();
  await coordinator.close();
  if (profileDir) {
    for (const file of fs.readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'))) {
      console.log(`${file}:\n${summarizeProfile(JSON.parse(fs.readFileSync(path.join(profileDir, file), 'utf8')))}`);
    }
  }
}
