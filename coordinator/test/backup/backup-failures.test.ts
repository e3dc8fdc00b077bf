import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BACKUP_FORMAT,
  DATABASE_MEMBER,
  HEADER_MEMBER,
  MANIFEST_MEMBER,
  type ArchiveMember,
} from '../../src/backup/archive-format.js';
import { ArchiveWriter } from '../../src/backup/archive-writer.js';
import { backup, type BackupOptions } from '../../src/backup/backup.js';
import { BackupError } from '../../src/backup/backup-error.js';
import { silentProgress } from '../../src/backup/progress.js';
import { restore } from '../../src/backup/restore.js';
import { loadBackupConfig } from '../../src/config/backup-config.js';
import { databaseFile, openDatabase } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { loadOrCreateSecretBox } from '../../src/domain/secrets/secret-box.js';
import { loadOrCreateServerKey } from '../../src/domain/secrets/server-key.js';

/**
 * `backup` and `restore` when things go wrong around them: a disk that fills up under the
 * archive, the files a killed backup left, a target in the data directory itself, a data
 * directory that cannot be written during a restore, a backup cut after a few bytes. Refusals
 * of bad input: backup.test.ts; a backup of a running coordinator: test/e2e/backup.test.ts.
 */

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-backup-failures-'));
const dir = (name: string) => path.join(root, name);
const dataDir = dir('data');
const backups = dir('backups');
const config = () => loadBackupConfig({}, { dataDir });
let good: string;
/** A backup with a blob and its `.meta` after the database (made by the writer: no blob in `dataDir`). */
let withBlob: string;

beforeAll(async () => {
  fs.mkdirSync(backups);
  const db = openDatabase(databaseFile(dataDir));
  migrate(db);
  db.close();
  loadOrCreateServerKey(dataDir);
  loadOrCreateSecretBox(dataDir);
  good = path.join(backups, 'good.tar.gz');
  await backup({ config: config(), to: good });
  withBlob = await archiveWithBlob(path.join(backups, 'with-blob.tar.gz'));
});

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

async function archiveWithBlob(file: string): Promise<string> {
  const blob = 'blobs/ab/ab345678-1234-4234-8234-123456789abc';
  const members = [
    { path: DATABASE_MEMBER, data: sqliteHolding(randomBytes(64 * 1024)) },
    { path: blob, data: randomBytes(3000) },
    { path: `${blob}.meta`, data: Buffer.from('{"contentType":"text/plain"}\n') },
  ];
  const writer = new ArchiveWriter(await fsp.open(file, 'w', 0o600));
  const at = new Date();
  const header = { format: BACKUP_FORMAT, formatVersion: 1, coordinatorVersion: '0.1.0', createdAt: at.toISOString() };
  await writer.bufferMember(HEADER_MEMBER, Buffer.from(JSON.stringify(header)), at);
  const listed: ArchiveMember[] = [];
  for (const member of members) listed.push(await writer.bufferMember(member.path, member.data, at));
  const manifest = { ...header, database: 'sqlite', schemaVersion: 1, blobs: 'included', members: listed };
  await writer.bufferMember(MANIFEST_MEMBER, Buffer.from(JSON.stringify(manifest)), at);
  await writer.finish();
  return file;
}

/** A SQLite database (no coordinator's: no `schema_migrations`) of a little more than `data`. */
function sqliteHolding(data: Buffer): Buffer {
  const file = path.join(root, `holding-${randomBytes(4).toString('hex')}.sqlite`);
  const db = new Database(file);
  db.exec('CREATE TABLE t (x BLOB)');
  db.prepare('INSERT INTO t VALUES (?)').run(data);
  db.close();
  const bytes = fs.readFileSync(file);
  fs.rmSync(file);
  return bytes;
}

async function failure(promise: Promise<unknown>) {
  const error = await promise.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(BackupError);
  return { code: (error as BackupError).code, message: (error as Error).message };
}

const backupError = (options: Partial<BackupOptions> & { to: string }) =>
  failure(backup({ config: config(), ...options }));

describe('a full disk under the archive', () => {
  it('fails the write waiting on the compressor instead of waiting for ever', async () => {
    const noSpace = Object.assign(new Error('ENOSPC: no space left on device, write'), {
      code: 'ENOSPC',
      syscall: 'write',
    });
    const full = new Writable({ write: (_chunk, _encoding, callback) => callback(noSpace) });
    const writer = new ArchiveWriter(full);
    // Random bytes do not compress: the compressor's output, which the failed file no longer
    // takes, fills its buffer, and the write waits. Before the fix it waited for ever (here: the
    // test's timeout; in `backup`, exit status 13 with the temporary files left).
    await expect(writer.bufferMember('blob', randomBytes(4 * 1024 * 1024), new Date())).rejects.toBe(noSpace);
    await expect(writer.bufferMember('next', Buffer.from('x'), new Date())).rejects.toBe(noSpace);
    await writer.abandon();
    expect(full.destroyed).toBe(true);
  }, 5_000);
});

describe('the temporary files of a backup', () => {
  it('are named after the process; those a killed backup left are removed by the next one, not those of a running one', async () => {
    const to = dir('nightly');
    fs.mkdirSync(to);
    // A process that exited: its id names no process now.
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const left = [
      `.drover-backup-${dead}.partial`,
      `.drover-backup-${dead}.partial-snapshot.sqlite`,
      `.drover-backup-${dead}.partial-snapshot.sqlite-journal`,
    ];
    const running = `.drover-backup-${process.ppid}.partial`; // Vitest's main process
    for (const name of [...left, running, 'drover-20260101-030000.tar.gz', 'notes.txt']) {
      fs.writeFileSync(path.join(to, name), 'x');
    }
    let during: string[] = [];
    await backup({
      config: config(),
      to: path.join(to, 'drover-20260102-030000.tar.gz'),
      afterSnapshot: () => {
        during = fs.readdirSync(to).filter((name) => name.includes(String(process.pid)));
      },
    });
    // What a `kill -9` at that point leaves: the next backup knows it by the id.
    expect(during.sort()).toEqual([
      `.drover-backup-${process.pid}.partial`,
      `.drover-backup-${process.pid}.partial-snapshot.sqlite`,
    ]);
    expect(fs.readdirSync(to).sort()).toEqual(
      [running, 'drover-20260101-030000.tar.gz', 'drover-20260102-030000.tar.gz', 'notes.txt'].sort(),
    );
  });
});

describe('a target in the data directory', () => {
  it('is refused, with --force too, and through a symbolic link: the database is left alone', async () => {
    const dbFile = databaseFile(dataDir);
    const before = fs.readFileSync(dbFile);
    const listed = fs.readdirSync(dataDir).sort();
    expect(await backupError({ to: dbFile, force: true })).toEqual({
      code: 'refused',
      message: `${dbFile} is in the data directory ${dataDir}: write the backup outside it (--to)`,
    });
    const link = dir('link-to-data');
    fs.symlinkSync(dataDir, link);
    const via = path.join(link, 'blobs.tar.gz');
    expect(await backupError({ to: via })).toEqual({
      code: 'refused',
      message: `${via} is in the data directory ${dataDir}: write the backup outside it (--to)`,
    });
    expect(await backupError({ to: dataDir, force: true })).toMatchObject({ code: 'refused' });
    expect(fs.readFileSync(dbFile).equals(before)).toBe(true);
    expect(fs.readdirSync(dataDir).sort()).toEqual(listed);
    // Beside it is fine.
    await backup({ config: config(), to: `${dataDir}.tar.gz` });
  });
});

describe('restore', () => {
  it('writes every file whole: what the restored files hold is what the manifest lists', async () => {
    // Each file and directory is synced to disk too (archive-reader.ts, restore.ts); no test can
    // prove a sync short of a power cut: this one checks the files on disk are complete.
    const into = dir('restored-with-blob');
    const { manifest } = await restore({ from: withBlob, dataDir: into });
    expect(manifest.members).toHaveLength(3);
    for (const member of manifest.members) {
      const data = fs.readFileSync(path.join(into, member.path));
      expect({ path: member.path, size: data.length, sha256: createHash('sha256').update(data).digest('hex') }).toEqual(
        member,
      );
    }
    expect(fs.readdirSync(into).sort()).toEqual(['blobs', DATABASE_MEMBER]);
  });

  it('blames the data directory, not the backup, for a write that fails', async () => {
    const into = dir('restored-write-fails');
    // While the database is written, a file where the blobs' directory goes: the next member
    // cannot be written, as none can on a full disk.
    let blocked = false;
    const progress = {
      ...silentProgress,
      update: () => {
        if (blocked) return;
        blocked = true;
        const staging = fs.readdirSync(into).find((name) => name.startsWith('.restore-'))!;
        fs.writeFileSync(path.join(into, staging, 'blobs'), '');
      },
    };
    expect(await failure(restore({ from: withBlob, dataDir: into, progress }))).toEqual({
      code: 'failed',
      message: `cannot write into ${into}: a part of its path is not a directory`,
    });
    expect(blocked).toBe(true);
    expect(fs.existsSync(into), 'the data directory it made').toBe(false);
  });

  it('removes the directories it made above the data directory too, the deepest first, each only while empty', async () => {
    const made = dir('made-above');
    const into = path.join(made, 'x', 'y', 'data');
    let blocked = false;
    const progress = {
      ...silentProgress,
      update: () => {
        if (blocked) return;
        blocked = true;
        const staging = fs.readdirSync(into).find((name) => name.startsWith('.restore-'))!;
        fs.writeFileSync(path.join(into, staging, 'blobs'), '');
        fs.writeFileSync(path.join(made, 'x', 'notes.txt'), 'written meanwhile, by someone else');
      },
    };
    expect(await failure(restore({ from: withBlob, dataDir: into, progress }))).toMatchObject({ code: 'failed' });
    expect(blocked).toBe(true);
    // `x/y` and `data` were empty again: removed; `x` holds a file it did not write: left, with `made-above`.
    expect(fs.readdirSync(made)).toEqual(['x']);
    expect(fs.readdirSync(path.join(made, 'x'))).toEqual(['notes.txt']);
  });

  it('removes the staging directory and takes over the lock that a killed restore left; not those of a running one', async () => {
    // What `kill -9` while the archive is read leaves: the lock of a process that is gone, and
    // the staging directory with the members read so far.
    const into = dir('restored-after-kill');
    fs.mkdirSync(into, { mode: 0o700 });
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    fs.writeFileSync(path.join(into, 'coordinator.lock'), `${dead}\nboot:12345\n`);
    const left = '.restore-46c7777f';
    fs.mkdirSync(path.join(into, left, 'blobs', 'ab'), { recursive: true });
    fs.writeFileSync(path.join(into, left, DATABASE_MEMBER), randomBytes(4096));
    const steps: string[] = [];
    await restore({ from: good, dataDir: into, progress: { ...silentProgress, step: (line) => steps.push(line) } });
    expect(steps[0]).toBe('removed .restore-46c7777f, the staging directory of a restore that was stopped');
    expect(fs.readdirSync(into).sort()).toEqual([DATABASE_MEMBER, 'secrets.key', 'server-ed25519.key']);

    // Under a running restore (Vitest's main process holding the lock, as a running one would):
    // in use, and its staging directory is left alone.
    const busy = dir('restore-running');
    fs.mkdirSync(path.join(busy, left), { recursive: true });
    fs.writeFileSync(path.join(busy, 'coordinator.lock'), `${process.ppid}\n`);
    expect(await failure(restore({ from: good, dataDir: busy }))).toEqual({
      code: 'failed',
      message: `the data directory ${busy} is in use by another drover-coordinator (pid ${process.ppid}); stop it first`,
    });
    expect(fs.readdirSync(busy).sort()).toEqual([left, 'coordinator.lock']);

    // Beside anything else, a refusal that names that, and removes nothing.
    const full = dir('restore-full');
    fs.mkdirSync(path.join(full, left), { recursive: true });
    fs.writeFileSync(path.join(full, 'notes.txt'), 'mine');
    expect(await failure(restore({ from: good, dataDir: full }))).toEqual({
      code: 'refused',
      message: `the data directory ${full} is not empty (it holds notes.txt): restore into an empty or new directory (--data-dir)`,
    });
    expect(fs.readdirSync(full).sort()).toEqual([left, 'notes.txt']);
  });

  it('says a backup cut after a few bytes is damaged or truncated, as a longer cut', async () => {
    const cut = path.join(backups, 'cut.tar.gz');
    fs.writeFileSync(cut, fs.readFileSync(good).subarray(0, 100)); // `head -c 100`
    const into = dir('restored-cut');
    expect(await failure(restore({ from: cut, dataDir: into }))).toEqual({
      code: 'refused',
      message: `${cut} cannot be restored: it is damaged or truncated (zlib: unexpected end of file)`,
    });
    expect(fs.existsSync(into)).toBe(false);
  });
});
