/**
 * Benchmark: `drover-coordinator copy-data` (docs/scaling.md, "Moving a coordinator"): how fast a
 * SQLite coordinator's rows go into PostgreSQL and its files into a bucket. No goal: the figure
 * tells an operator how long the coordinator stays stopped during the move.
 *
 *   pnpm bench bench/copy-data.ts --to postgres://user:password@host/empty_db [--files-to s3://...]
 *     [--jobs 100000] [--logs-per-job 10] [--files 100] [--file-kib 1024]
 *
 * A data directory made by a real coordinator (createCoordinator on SQLite, bootstrapped, then
 * closed) with 10 agents, a trigger per agent, `--jobs` jobs (busy-organization statuses) with
 * `--logs-per-job` log lines of ~80 characters each and one audit entry each, written with SQL
 * in one transaction; and `--files` active files of `--file-kib` KiB of random bytes on disk.
 * Then `copyData` as the command runs it (in this process), into `--to` (an empty database)
 * and, with `--files-to`, the bucket (keys from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY).
 * Prints rows per second for the database and MiB per second for the files.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { copyData, createCoordinator, createLogger, loadConfig, loadCopyDataConfig } from '@drover/coordinator';
import { integerOption } from './lib/options.js';
import { machineNote } from './lib/report.js';
import { seedAgents, seedTrigger } from './lib/seed.js';

const { values } = parseArgs({
  options: {
    to: { type: 'string' },
    'files-to': { type: 'string' },
    jobs: { type: 'string', default: '100000' },
    'logs-per-job': { type: 'string', default: '10' },
    files: { type: 'string', default: '100' },
    'file-kib': { type: 'string', default: '1024' },
  },
});
const jobCount = integerOption('jobs', values.jobs, 1);
const logsPerJob = integerOption('logs-per-job', values['logs-per-job'], 0);
const fileCount = integerOption('files', values.files, 0);
const fileKib = integerOption('file-kib', values['file-kib'], 1);
const copyConfig = loadCopyDataConfig(process.env, {
  dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'drover-bench-copy-')),
  to: values.to,
  filesTo: values['files-to'],
});
const { dataDir } = copyConfig;

try {
  const config = loadConfig(
    {
      DROVER_BOOTSTRAP_EMAIL: 'bench@example.test',
      DROVER_BOOTSTRAP_PASSWORD: 'bench password',
      DROVER_BOOTSTRAP_ORG: 'bench',
    },
    { port: '0', dataDir, logLevel: 'warn' },
  );
  const coordinator = await createCoordinator(config, createLogger(config.logLevel));
  const seeding = Date.now();
  try {
    const { repos } = coordinator.ctx;
    const owner = (await repos.users.findByEmail('bench@example.test'))!;
    const orgId = (await repos.orgs.listForUser(owner.id))[0]!.id;
    const bindingId = (await repos.storageBindings.listByOrg(orgId))[0]!.id;
    const agents = await seedAgents(coordinator, orgId, { count: 10, workflowsPerAgent: 1 });
    const triggers: { id: string; agentId: string; workflowName: string }[] = [];
    for (const agent of agents) {
      const id = await seedTrigger(coordinator, orgId, owner.id, {
        agentId: agent.id,
        workflowName: agent.workflowNames[0]!,
        responseMode: 'async',
      });
      triggers.push({ id, agentId: agent.id, workflowName: agent.workflowNames[0]! });
    }
    const { db } = coordinator;
    const job = db.prepare(
      `INSERT INTO jobs (id, number, org_id, kind, source, trigger_id, agent_id, workflow_name, status, ref, params,
         output, exit_code, user_id, created_at, queued_at, started_at, finished_at)
       VALUES (?, ?, ?, 'trigger', 'webhook', ?, ?, ?, ?, 'main', ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const log = db.prepare('INSERT INTO job_logs (job_id, seq, at, stream, step, text) VALUES (?, ?, ?, ?, ?, ?)');
    const audit = db.prepare(
      `INSERT INTO audit_log (org_id, actor_type, actor_id, action, target_type, target_id, metadata, created_at)
       VALUES (?, 'api_token', ?, 'trigger.run', 'job', ?, ?, ?)`,
    );
    const start = Date.now() - 30 * 86_400_000;
    db.transaction(() => {
      for (let i = 0; i < jobCount; i++) {
        const id = randomUUID();
        const trigger = triggers[i % triggers.length]!;
        const at = (ms: number) => new Date(start + i * 1000 + ms).toISOString();
        const ok = i % 10 !== 0;
        job.run(
          id,
          i + 1,
          orgId,
          trigger.id,
          trigger.agentId,
          trigger.workflowName,
          ok ? 'success' : 'failed',
          JSON.stringify({ ref: `v1.${i % 100}`, replicas: i % 5 }),
          ok ? JSON.stringify({ url: `https://example.test/builds/${i}` }) : null,
          ok ? 0 : 1,
          owner.id,
          at(0),
          at(40),
          at(120),
          at(5000),
        );
        for (let seq = 1; seq <= logsPerJob; seq++) {
          log.run(
            id,
            seq,
            at(120 + seq),
            seq % 7 === 0 ? 'stderr' : 'stdout',
            0,
            `step 0 line ${seq}: ${'x'.repeat(60)}`,
          );
        }
        audit.run(orgId, randomUUID(), id, JSON.stringify({ triggerId: trigger.id, status: 202 }), at(0));
      }
    })();
    const file = db.prepare(
      `INSERT INTO files (id, org_id, binding_id, filename, content_type, size, sha256, status, cleanup_rule,
         created_at, completed_at, upload_expires_at, blob_key, origin)
       VALUES (?, ?, ?, ?, 'application/octet-stream', ?, ?, 'active', 'persistent', ?, ?, ?, ?, 'api')`,
    );
    for (let i = 0; i < fileCount; i++) {
      const id = randomUUID();
      const bytes = randomBytes(fileKib * 1024);
      const blobKey = `${id.slice(0, 2)}/${id}`;
      fs.mkdirSync(path.join(dataDir, 'blobs', id.slice(0, 2)), { recursive: true });
      fs.writeFileSync(path.join(dataDir, 'blobs', blobKey), bytes);
      const at = new Date().toISOString();
      file.run(
        id,
        orgId,
        bindingId,
        `artifact-${i}.bin`,
        bytes.length,
        createHash('sha256').update(bytes).digest('hex'),
        at,
        at,
        at,
        blobKey,
      );
    }
  } finally {
    await coordinator.close();
  }
  console.log(
    `copy-data: ${jobCount.toLocaleString('en-US')} jobs, ${(jobCount * logsPerJob).toLocaleString('en-US')} log lines, ` +
      `${fileCount} files of ${fileKib} KiB, written in ${((Date.now() - seeding) / 1000).toFixed(1)} s; ` +
      `the SQLite file is ${(fs.statSync(path.join(dataDir, 'drover.sqlite')).size / 1024 ** 2).toFixed(0)} MiB; ${machineNote()}`,
  );

  const cpu = process.cpuUsage();
  const report = await copyData(copyConfig, (line) => console.log(line));
  const { user, system } = process.cpuUsage(cpu);
  const rows = report.tables.reduce((sum, t) => sum + t.rows, 0);
  console.log(
    `database: ${rows.toLocaleString('en-US')} rows in ${report.seconds.database.toFixed(1)} s: ` +
      `${Math.round(rows / report.seconds.database).toLocaleString('en-US')} rows/s`,
  );
  if (report.blobs) {
    const mib = report.blobs.bytes / 1024 ** 2;
    console.log(
      `files: ${report.blobs.copied} files, ${mib.toFixed(0)} MiB in ${report.seconds.files.toFixed(1)} s: ` +
        `${(mib / report.seconds.files).toFixed(1)} MiB/s`,
    );
  }
  console.log(
    `total: ${report.seconds.total.toFixed(1)} s, of which this process (reading SQLite, encoding, uploading) used ` +
      `${((user + system) / 1e6).toFixed(1)} s of CPU`,
  );
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
