import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { backup } from '../../coordinator/src/backup/backup.js';
import { restore } from '../../coordinator/src/backup/restore.js';
import { lockDataDir } from '../../coordinator/src/cli/data-dir-lock.js';
import { loadBackupConfig } from '../../coordinator/src/config/backup-config.js';
import { loadOrCreateServerKey } from '../../coordinator/src/domain/secrets/server-key.js';
import { agentVia, enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { COORDINATOR_MAIN } from '../helpers/built-commands.js';
import { coordinatorCli, killLeftoverCoordinators } from '../helpers/coordinator-cli.js';
import { databaseEnv, makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { eventually } from '../helpers/poll.js';
import { sha256, storageClient, uploadFile } from '../helpers/storage.js';
import { runnableTrigger } from '../helpers/trigger-runs.js';

/**
 * `drover-coordinator backup` of a running coordinator and `restore` of it (docs/operations.md,
 * "Backup and restore"): on SQLite the backup taken under a stream of trigger runs holds every job
 * acknowledged before it began, and a coordinator started on the restored data directory is the
 * same one to its agents; on PostgreSQL the command points to pg_dump and `--keys-only` saves the
 * keys. The refusals of bad input are unit tests (coordinator/test/backup/).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const onPostgres = process.env.DROVER_TEST_DATABASE === 'postgres';
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = makeTempDir(prefix);
  dirs.push(dir);
  return dir;
};
const running: TestCoordinator[] = [];

afterEach(() => {
  expect(killLeftoverCoordinators(), 'child processes left running').toEqual([]);
});

afterAll(async () => {
  for (const t of running) await t.close();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

async function cli(args: string[], env: Record<string, string> = {}) {
  const c = coordinatorCli(args, env);
  const code = await c.exited;
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

describe.skipIf(onPostgres)('a backup of a running coordinator on SQLite', () => {
  const dataDir = tempDir('drover-backup-source-');
  const backups = tempDir('drover-backups-');
  let t: TestCoordinator;
  let agent: TestAgent;
  let trigger: { id: string; token: string };
  let file: { id: string; sha256: string };

  beforeAll(async () => {
    t = await startTestCoordinator({ dataDir, database: 'sqlite' });
    running.push(t);
    agent = await enrollTestAgent(t.owner, t.orgId, { hostname: 'edge-1' });
    expect((await agent.putWorkflows([workflow('build')])).status).toBe(200);
    trigger = await runnableTrigger(t, agent.agentId, 'build');
    const storage = await storageClient(t, null, ['read', 'write', 'delete']);
    const content = 'kept in the backup\n'.repeat(500);
    file = { id: (await uploadFile(storage, content)).fileId, sha256: sha256(content) };
  });

  it('holds every job acknowledged before it began; restored, the same agent runs a job on it', async () => {
    // Trigger runs go on while the backup runs, one after the other.
    const acknowledged: string[] = [];
    let stop = false;
    const runs = (async () => {
      while (!stop) {
        const run = await t.api.post(`/triggers/${trigger.id}/run`, { token: trigger.token, body: {} });
        expect(run.status, run.text).toBe(202);
        acknowledged.push(run.body.jobId as string);
      }
    })();
    await eventually(() => acknowledged.length >= 5);
    const before = [...acknowledged];
    const archive = path.join(backups, 'drover.tar.gz');
    // The data directory's lock held, as `drover-coordinator start` holds it: the backup needs it not.
    const releaseLock = lockDataDir(dataDir);
    const made = await cli(['backup', '--data-dir', dataDir, '--to', archive]).finally(releaseLock);
    const during = acknowledged.length;
    stop = true;
    await runs;
    expect(during, 'trigger runs went on during the backup').toBeGreaterThan(before.length);
    expect(made.stderr).not.toMatch(/drover-coordinator:/);
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(
      new RegExp(
        `^backed up the database \\(schema version \\d+, .+\\), server-ed25519\\.key, secrets\\.key and 1 files \\(.+\\) to ${archive} \\(.+\\)\\n$`,
      ),
    );
    expect(fs.statSync(archive).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(backups)).toEqual(['drover.tar.gz']); // no .partial, no snapshot left
    // Any tar lists it.
    const listed = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).trim().split('\n');
    expect(listed[0]).toBe('backup.json');
    expect(listed.at(-1)).toBe('manifest.json');
    expect(listed).toContain(`blobs/${file.id.slice(0, 2)}/${file.id}`);

    const restoredDir = path.join(tempDir('drover-restore-'), 'data');
    const restored = await cli(['restore', '--from', archive, '--data-dir', restoredDir]);
    expect(restored.stderr).not.toMatch(/drover-coordinator:/);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toMatch(
      /^restored the database \(schema version \d+\), server-ed25519\.key, secrets\.key, 1 files from .+ every checksum verified/,
    );
    expect(fs.readdirSync(restoredDir).sort()).toEqual(['blobs', 'drover.sqlite', 'secrets.key', 'server-ed25519.key']);
    for (const key of ['server-ed25519.key', 'secrets.key']) {
      expect(fs.readFileSync(path.join(restoredDir, key), 'utf8')).toBe(
        fs.readFileSync(path.join(dataDir, key), 'utf8'),
      );
      expect(fs.statSync(path.join(restoredDir, key)).mode & 0o777).toBe(0o600);
    }

    const r = await startTestCoordinator({ dataDir: restoredDir, database: 'sqlite' });
    running.push(r);
    expect(r.coordinator.bootstrap.created).toBe(false);
    expect(r.coordinator.ctx.serverKey.publicKey).toBe(agent.serverPublicKey);
    for (const jobId of before) {
      const job = await r.owner.get(`/jobs/${jobId}`);
      expect(job.status, `job ${jobId} acknowledged before the backup: ${job.text}`).toBe(200);
    }
    // The file downloads with the same content.
    const storage = await storageClient(r, null, ['read']);
    const url = await storage.get(`/storage/files/${file.id}/download-url`);
    expect(url.status, url.text).toBe(200);
    expect(sha256(Buffer.from(await (await fetch(url.body.downloadUrl)).arrayBuffer()))).toBe(file.sha256);

    // The same enrolled agent (its key, the server key it pinned) is known and runs a new job.
    const same = agentVia(agent, r.baseUrl);
    const me = await same.request('GET', '/v1/agent/me');
    expect(me.status, me.text).toBe(200);
    expect(me.body.agentId).toBe(agent.agentId);
    const run = await r.api.post(`/triggers/${trigger.id}/run`, { token: trigger.token, body: {} });
    expect(run.status, run.text).toBe(202);
    const jobId = run.body.jobId as string;
    for (const step of ['accept', 'start']) {
      const res = await same.request('POST', `/v1/agent/jobs/${jobId}/${step}`);
      expect(res.status, res.text).toBe(200);
    }
    const finish = { status: 'success', exitCode: 0, errorMessage: null, output: {} };
    expect((await same.request('POST', `/v1/agent/jobs/${jobId}/finish`, finish)).status).toBe(200);
    expect((await r.owner.get(`/jobs/${jobId}`)).body.status).toBe('success');
  });

  it('counts a blob deleted between the snapshot and its copy, without failing', async () => {
    const storage = await storageClient(t, null, ['read', 'write']);
    const gone = await uploadFile(storage, 'deleted from the disk under the backup');
    const blob = path.join(dataDir, 'blobs', gone.fileId.slice(0, 2), gone.fileId);
    const report = await backup({
      config: loadBackupConfig({}, { dataDir }),
      to: path.join(backups, 'vanished.tar.gz'),
      afterSnapshot: () => fs.rmSync(blob),
    });
    expect(report.files).toMatchObject({ copied: 1, vanished: 1 });
  });

  it('restores only into an empty data directory, and not under a running coordinator: nothing changed', async () => {
    const archive = path.join(backups, 'refused.tar.gz');
    await backup({ config: loadBackupConfig({}, { dataDir }), to: archive, withoutBlobs: true });
    const target = tempDir('drover-restore-full-');
    fs.writeFileSync(path.join(target, 'notes.txt'), 'mine');
    const refused = await cli(['restore', '--from', archive, '--data-dir', target]);
    expect(refused.stderr).toBe(
      `drover-coordinator: the data directory ${target} is not empty (it holds notes.txt): restore into an empty or new directory (--data-dir)\n`,
    );
    expect(refused.code).toBe(2);
    expect(fs.readdirSync(target)).toEqual(['notes.txt']);
    expect(fs.readdirSync(path.dirname(target)).filter((n) => n.includes('.restore-'))).toEqual([]);

    // An empty directory that a coordinator holds (this process, as a running one would).
    const held = tempDir('drover-restore-held-');
    const release = lockDataDir(held);
    try {
      const error = await restore({ from: archive, dataDir: held }).catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: 'failed',
        message: `the data directory ${held} is in use by another drover-coordinator (pid ${process.pid}); stop it first`,
      });
      expect(fs.readdirSync(held)).toEqual(['coordinator.lock']);
    } finally {
      release();
    }
  });

  it('finishes, run again, a restore stopped while it moved its files into place; start refuses the directory meanwhile', async () => {
    const archive = path.join(backups, 'stopped.tar.gz');
    expect((await cli(['backup', '--data-dir', dataDir, '--to', archive])).code).toBe(0);
    // What `kill -9` (or a power cut) between the renames leaves: the keys and the blobs moved
    // into the data directory, the database still in the staging directory, the lock of a
    // process that is gone.
    const whole = path.join(tempDir('drover-restore-whole-'), 'data');
    expect((await cli(['restore', '--from', archive, '--data-dir', whole])).code).toBe(0);
    const target = path.join(tempDir('drover-restore-stopped-'), 'data');
    const staging = '.restore-0a1b2c3d';
    fs.mkdirSync(path.join(target, staging), { recursive: true, mode: 0o700 });
    for (const name of ['server-ed25519.key', 'secrets.key', 'blobs']) {
      fs.renameSync(path.join(whole, name), path.join(target, name));
    }
    fs.renameSync(path.join(whole, 'drover.sqlite'), path.join(target, staging, 'drover.sqlite'));
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    fs.writeFileSync(path.join(target, 'coordinator.lock'), `${dead}\nboot:12345\n`);

    // A coordinator started there would make a new, empty database beside the restored server key.
    for (const command of ['migrate', 'start']) {
      const started = await cli([command, '--port', '0', '--data-dir', target]);
      expect(started.stderr).toBe(
        `drover-coordinator: the data directory ${target} holds ${staging}, left by a restore that was stopped before it finished: run drover-coordinator restore into it again (what the stopped one left is removed first)\n`,
      );
      expect(started.code).toBe(2);
      expect(fs.existsSync(path.join(target, 'drover.sqlite'))).toBe(false);
    }

    const again = await cli(['restore', '--from', archive, '--data-dir', target]);
    expect(again.stderr).toMatch(
      /removed blobs, secrets\.key, server-ed25519\.key, moved into place by a restore that was stopped before its database/,
    );
    expect(again.stderr).toMatch(/removed \.restore-0a1b2c3d, the staging directory of a restore that was stopped/);
    expect(again.code, again.stderr).toBe(0);
    expect(fs.readdirSync(target).sort()).toEqual(['blobs', 'drover.sqlite', 'secrets.key', 'server-ed25519.key']);

    const r = await startTestCoordinator({ dataDir: target, database: 'sqlite' });
    running.push(r);
    expect(r.coordinator.bootstrap.created).toBe(false);
    expect(r.coordinator.ctx.serverKey.publicKey).toBe(agent.serverPublicKey);
    const storage = await storageClient(r, null, ['read']);
    const url = await storage.get(`/storage/files/${file.id}/download-url`);
    expect(url.status, url.text).toBe(200);
    expect(sha256(Buffer.from(await (await fetch(url.body.downloadUrl)).arrayBuffer()))).toBe(file.sha256);
  });

  it('runs the nightly recipe of docs/operations.md: a new backup, the last 7 kept', async () => {
    const docs = fs.readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
    const blocks = [...docs.matchAll(/```ini\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const service = blocks.find((b) => b.includes('Description=Drover nightly backup'));
    expect(service, 'the drover-backup.service unit in docs/operations.md').toBeDefined();
    expect(blocks.some((b) => b.includes('Unit=drover-backup.service') && b.includes('OnCalendar='))).toBe(true);
    const execStart = service!.match(/^ExecStart=\/bin\/sh -c '(.*)'$/m)?.[1];
    expect(execStart).toBeDefined();
    const env = Object.fromEntries(
      [...service!.matchAll(/^Environment=(\w+)=(.*)$/gm)].map(([, k, v]) => [
        k!,
        v!.replace('/var/lib/drover', dataDir),
      ]),
    );
    const nightly = tempDir('drover-nightly-');
    for (let i = 0; i < 8; i++) {
      const old = path.join(nightly, `drover-2026010${i}-030000.tar.gz`);
      fs.writeFileSync(old, 'old');
      fs.utimesSync(old, new Date(2026, 0, i + 1), new Date(2026, 0, i + 1));
    }
    const command = execStart!
      .replaceAll('%%', '%')
      .replaceAll('/var/backups/drover', nightly)
      .replaceAll('/opt/drover/drover-coordinator', `${process.execPath} ${COORDINATOR_MAIN}`);
    execFileSync('/bin/sh', ['-c', command], { cwd: ROOT, env: { ...process.env, ...env }, stdio: 'pipe' });
    const kept = fs.readdirSync(nightly).sort();
    expect(kept).toHaveLength(7);
    const fresh = kept.filter((name) => fs.statSync(path.join(nightly, name)).size > 100);
    expect(fresh).toHaveLength(1);
    expect(fresh[0]).toMatch(/^drover-\d{8}-\d{6}\.tar\.gz$/);
    expect(kept).not.toContain('drover-20260100-030000.tar.gz'); // the oldest two are gone
    expect(kept).not.toContain('drover-20260101-030000.tar.gz');
  });
});

describe.runIf(onPostgres)('a backup of a coordinator on PostgreSQL', () => {
  it('points to pg_dump; --keys-only saves the keys the database holds, and they restore', async () => {
    const dataDir = tempDir('drover-backup-pg-');
    const t = await startTestCoordinator({ dataDir });
    running.push(t);
    const env = await databaseEnv(dataDir);
    const archive = path.join(tempDir('drover-backups-pg-'), 'keys.tar.gz');
    const refused = await cli(['backup', '--data-dir', dataDir, '--to', archive], env);
    expect(refused.stderr).toMatch(
      /^drover-coordinator: the coordinator keeps its state in PostgreSQL \(postgres:\/\/.+\): back the database up with pg_dump, and the server's keys with drover-coordinator backup --keys-only, then the files in (.+) with tar\n$/,
    );
    expect(refused.stderr).toContain(` ${dataDir}/blobs with tar`);
    expect(refused.code).toBe(2);
    expect(fs.existsSync(archive)).toBe(false);

    const report = await backup({
      config: loadBackupConfig(env, { dataDir }),
      to: archive,
      keysOnly: true,
      withoutBlobs: true,
    });
    expect(report).toMatchObject({ database: null, keys: ['server-ed25519.key', 'secrets.key'], blobs: 'left out' });
    const restoredDir = path.join(tempDir('drover-restore-pg-'), 'data');
    const { manifest } = await restore({ from: archive, dataDir: restoredDir });
    expect(manifest.database).toBe('postgres');
    expect(fs.readdirSync(restoredDir).sort()).toEqual(['secrets.key', 'server-ed25519.key']);
    expect(loadOrCreateServerKey(restoredDir).publicKey).toBe(t.coordinator.ctx.serverKey.publicKey);
  });

  it('runs the recipe of docs/operations.md for files kept in the data directory: they download after the restore', async () => {
    const dataDir = tempDir('drover-backup-pg-files-');
    const t = await startTestCoordinator({ dataDir });
    running.push(t);
    const storage = await storageClient(t, null, ['read', 'write']);
    const content = 'kept in the data directory of a coordinator on PostgreSQL\n'.repeat(100);
    const file = (await uploadFile(storage, content, { cleanupRule: 'persistent' })).fileId;
    const env = await databaseEnv(dataDir);
    const backups = tempDir('drover-backups-pg-files-');
    const keys = await cli(
      ['backup', '--keys-only', '--data-dir', dataDir, '--to', path.join(backups, 'keys.tar.gz')],
      env,
    );
    expect(keys.code, keys.stderr).toBe(0);
    // The report says the files are left out, and how to back them up.
    const said = keys.stdout.match(/^the files are in (\S+), not in this backup: .* \((tar .*)\)$/m);
    expect(said?.[1]).toBe(path.join(dataDir, 'blobs'));
    const files = path.join(backups, 'files.tar.gz');
    execFileSync('/bin/sh', ['-c', said![2]!.replace('<file>', files)]);
    await t.close();

    // On a new machine: the keys restored into an empty data directory, then the files (the
    // database as pg_restore would bring it back: the same one here).
    const restoredDir = path.join(tempDir('drover-restore-pg-files-'), 'data');
    expect((await cli(['restore', '--from', path.join(backups, 'keys.tar.gz'), '--data-dir', restoredDir])).code).toBe(
      0,
    );
    execFileSync('tar', ['-xzf', files, '-C', restoredDir]);
    const r = await startTestCoordinator({
      dataDir: restoredDir,
      env: { DROVER_DATABASE_URL: env.DROVER_DATABASE_URL! },
    });
    running.push(r);
    const url = await (await storageClient(r, null, ['read'])).get(`/storage/files/${file}/download-url`);
    expect(url.status, url.text).toBe(200);
    const download = await fetch(url.body.downloadUrl);
    expect(download.status).toBe(200);
    expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(sha256(content));
  });
});
