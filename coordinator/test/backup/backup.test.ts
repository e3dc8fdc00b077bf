import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
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
import { backup, snapshotDatabase, type BackupOptions } from '../../src/backup/backup.js';
import { BackupError } from '../../src/backup/backup-error.js';
import { progressOn } from '../../src/backup/progress.js';
import { backupReportLines } from '../../src/backup/report.js';
import { restore } from '../../src/backup/restore.js';
import { loadBackupConfig } from '../../src/config/backup-config.js';
import { databaseFile, openDatabase } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { loadOrCreateSecretBox } from '../../src/domain/secrets/secret-box.js';
import { loadOrCreateServerKey } from '../../src/domain/secrets/server-key.js';

/**
 * `backup` and `restore` on a data directory of a stopped coordinator (a migrated database and its
 * two keys): what they refuse, with the one line the command prints, and that a refusal or a
 * failure writes nothing. A backup of a running coordinator, and a restore a coordinator then
 * starts on: test/e2e/backup.test.ts.
 */

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-backup-unit-'));
const dir = (name: string) => path.join(root, name);
const dataDir = dir('data');
const backups = dir('backups');
let good: string;

beforeAll(async () => {
  fs.mkdirSync(backups);
  const db = openDatabase(databaseFile(dataDir));
  migrate(db);
  db.close();
  loadOrCreateServerKey(dataDir);
  loadOrCreateSecretBox(dataDir);
  good = path.join(backups, 'good.tar.gz');
  await backup({ config: loadBackupConfig({}, { dataDir }), to: good });
});

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

async function backupError(options: Partial<BackupOptions> & { to: string }, env: Record<string, string> = {}) {
  const error = await backup({ config: loadBackupConfig(env, { dataDir }), ...options }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(BackupError);
  return { code: (error as BackupError).code, message: (error as Error).message };
}

async function restoreError(from: string, into = dir(`restored-${Math.random().toString(16).slice(2)}`)) {
  const error = await restore({ from, dataDir: into }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(BackupError);
  expect(fs.existsSync(into), 'the data directory was created').toBe(false);
  expect(fs.readdirSync(path.dirname(into)).filter((n) => n.includes('.restore-'))).toEqual([]);
  return { code: (error as BackupError).code, message: (error as Error).message };
}

/** An archive written member by member, as `backup` writes one, for the damaged and forged cases. */
async function archive(
  name: string,
  members: { path: string; data: Buffer }[],
  manifest?: (listed: ArchiveMember[]) => unknown,
): Promise<string> {
  const file = path.join(backups, name);
  const writer = new ArchiveWriter(await fsp.open(file, 'w', 0o600));
  const listed: ArchiveMember[] = [];
  const at = new Date();
  for (const member of members) {
    const written = await writer.bufferMember(member.path, member.data, at);
    if (member.path !== HEADER_MEMBER) listed.push(written);
  }
  if (manifest) {
    await writer.bufferMember(MANIFEST_MEMBER, Buffer.from(JSON.stringify(manifest(listed))), at);
  }
  await writer.finish();
  return file;
}

const header = (formatVersion = 1) =>
  Buffer.from(
    JSON.stringify({
      format: BACKUP_FORMAT,
      formatVersion,
      coordinatorVersion: '9.9.9',
      createdAt: '2026-01-01T00:00:00Z',
    }),
  );
const manifestOf = (members: ArchiveMember[]) => ({
  format: BACKUP_FORMAT,
  formatVersion: 1,
  coordinatorVersion: '0.1.0',
  createdAt: '2026-01-01T00:00:00Z',
  database: 'sqlite',
  schemaVersion: 1,
  blobs: 'left out',
  members,
});

describe('backup refuses, writing nothing', () => {
  it('an existing file without --force (replaced with it), a directory, a directory that does not exist', async () => {
    const existing = path.join(backups, 'existing.tar.gz');
    fs.writeFileSync(existing, 'keep me');
    expect(await backupError({ to: existing })).toEqual({
      code: 'refused',
      message: `${existing} already exists: pass --force to replace it`,
    });
    expect(fs.readFileSync(existing, 'utf8')).toBe('keep me');
    await backup({ config: loadBackupConfig({}, { dataDir }), to: existing, force: true });
    expect(fs.statSync(existing).size).toBeGreaterThan(1000);
    expect(fs.statSync(existing).mode & 0o777).toBe(0o600);

    expect(await backupError({ to: backups })).toEqual({
      code: 'refused',
      message: `${backups} is a directory: name the backup file (--to)`,
    });
    const missing = path.join(root, 'nope', 'b.tar.gz');
    expect(await backupError({ to: missing })).toEqual({
      code: 'refused',
      message: `cannot write ${missing}: the directory ${path.join(root, 'nope')} does not exist`,
    });
  });

  it('a place it cannot write (a failure): no file left', async () => {
    const notDir = path.join(backups, 'plain-file');
    fs.writeFileSync(notDir, '');
    const to = path.join(notDir, 'b.tar.gz');
    expect(await backupError({ to })).toEqual({
      code: 'failed',
      message: `cannot write ${to}: a part of its path is not a directory`,
    });
    // As root no directory is unwritable; as another user, a directory of root's (/ itself).
    if (process.getuid?.() !== 0) {
      expect(await backupError({ to: '/drover-backup-test.tar.gz' })).toEqual({
        code: 'failed',
        message: 'cannot write /drover-backup-test.tar.gz: permission denied',
      });
    }
  });

  it("a data directory that does not exist, one without a database, a file that is not a coordinator's database", async () => {
    const to = path.join(backups, 'never.tar.gz');
    const absent = dir('absent');
    const run = (d: string, extra: Partial<BackupOptions> = {}) =>
      backup({ config: loadBackupConfig({}, { dataDir: d }), to, ...extra }).catch((e: BackupError) => ({
        code: e.code,
        message: e.message,
      }));
    expect(await run(absent)).toEqual({
      code: 'refused',
      message: `the data directory ${absent} does not exist (--data-dir)`,
    });
    const empty = dir('empty');
    fs.mkdirSync(empty);
    expect(await run(empty)).toEqual({
      code: 'refused',
      message: `${empty} has no drover.sqlite: nothing to back up (is it the coordinator's data directory? --data-dir)`,
    });
    expect(await run(empty, { keysOnly: true })).toEqual({
      code: 'refused',
      message: `${empty} holds no key files (server-ed25519.key, secrets.key): nothing to back up`,
    });
    const other = dir('other');
    fs.mkdirSync(other);
    fs.writeFileSync(databaseFile(other), 'not a database at all, just text that is long enough to be read');
    expect(await run(other)).toEqual({
      code: 'refused',
      message: `${databaseFile(other)} is not a SQLite database: it is not a coordinator's database`,
    });
    expect(fs.readdirSync(backups)).not.toContain('never.tar.gz');
    expect(fs.readdirSync(backups).filter((n) => n.includes('partial'))).toEqual([]);
  });

  it('PostgreSQL without --keys-only, pointing to pg_dump, and to tar for files in the data directory (before connecting)', async () => {
    const postgres = { DROVER_DATABASE_URL: 'postgres://drover:hunter2@127.0.0.1:9/drover' };
    expect(await backupError({ to: path.join(backups, 'pg.tar.gz') }, postgres)).toEqual({
      code: 'refused',
      message: `the coordinator keeps its state in PostgreSQL (postgres://drover:****@127.0.0.1:9/drover): back the database up with pg_dump, and the server's keys with drover-coordinator backup --keys-only, then the files in ${dataDir}/blobs with tar`,
    });
    const bucket = 's3://drover-files/prod?endpoint=http://127.0.0.1:9000&region=us-east-1&forcePathStyle=true';
    expect(
      await backupError({ to: path.join(backups, 'pg.tar.gz') }, { ...postgres, DROVER_STORAGE_URL: bucket }),
    ).toEqual({
      code: 'refused',
      message:
        "the coordinator keeps its state in PostgreSQL (postgres://drover:****@127.0.0.1:9/drover): back the database up with pg_dump, and the server's keys with drover-coordinator backup --keys-only",
    });
  });

  it('takes --keys-only with --without-blobs: the keys alone', async () => {
    const to = path.join(backups, 'keys.tar.gz');
    const report = await backup({ config: loadBackupConfig({}, { dataDir }), to, keysOnly: true, withoutBlobs: true });
    expect(report).toMatchObject({ database: null, keys: ['server-ed25519.key', 'secrets.key'], blobs: 'left out' });
  });
});

describe('restore', () => {
  it('restores a backup into a new directory; its files are the data directory’s', async () => {
    const into = dir('restored-good');
    const report = await restore({ from: good, dataDir: into });
    expect(report.manifest).toMatchObject({ database: 'sqlite', blobs: 'included', coordinatorVersion: '0.1.0' });
    expect(fs.readdirSync(into).sort()).toEqual(['drover.sqlite', 'secrets.key', 'server-ed25519.key']);
    expect(fs.statSync(into).mode & 0o777).toBe(0o700);
    expect(loadOrCreateServerKey(into).publicKey).toBe(loadOrCreateServerKey(dataDir).publicKey);
  });

  it('refuses a file that is not a backup, a truncated one, a damaged one, one of a newer format: nothing written', async () => {
    const text = path.join(backups, 'notes.txt');
    fs.writeFileSync(text, 'just some notes\n'.repeat(100));
    expect(await restoreError(text)).toEqual({
      code: 'refused',
      message: `${text} cannot be restored: it is not a Drover coordinator backup`,
    });
    const otherTar = await archive('other.tar.gz', [{ path: 'README', data: Buffer.from('hello') }]);
    expect((await restoreError(otherTar)).message).toBe(
      `${otherTar} cannot be restored: it is not a Drover coordinator backup`,
    );

    const truncated = path.join(backups, 'truncated.tar.gz');
    fs.writeFileSync(truncated, fs.readFileSync(good).subarray(0, Math.floor(fs.statSync(good).size / 2)));
    expect((await restoreError(truncated)).message).toBe(
      `${truncated} cannot be restored: it is damaged or truncated (zlib: unexpected end of file)`,
    );
    // An empty directory stays as it was.
    const emptyTarget = dir('empty-target');
    fs.mkdirSync(emptyTarget);
    expect(await restore({ from: truncated, dataDir: emptyTarget }).catch((e: BackupError) => e.code)).toBe('refused');
    expect(fs.readdirSync(emptyTarget)).toEqual([]);
    const noManifest = await archive('no-manifest.tar.gz', [{ path: HEADER_MEMBER, data: header() }]);
    expect((await restoreError(noManifest)).message).toBe(
      `${noManifest} cannot be restored: it is truncated: its manifest.json is missing`,
    );

    const newer = await archive('newer.tar.gz', [{ path: HEADER_MEMBER, data: header(2) }], manifestOf);
    expect(await restoreError(newer)).toEqual({
      code: 'refused',
      message: `${newer} cannot be restored: it was made by a newer drover-coordinator (9.9.9, backup format 2; this one reads format 1): restore it with that version`,
    });

    const tampered = await archive(
      'tampered.tar.gz',
      [
        { path: HEADER_MEMBER, data: header() },
        { path: DATABASE_MEMBER, data: Buffer.from('changed after the manifest was written') },
      ],
      (members) => manifestOf(members.map((m) => ({ ...m, sha256: '0'.repeat(64) }))),
    );
    expect((await restoreError(tampered)).message).toMatch(
      new RegExp(
        `^${tampered} cannot be restored: it is damaged: drover\\.sqlite is 38 bytes with SHA-256 [0-9a-f]{64}, its manifest says 38 bytes with 0{64}$`,
      ),
    );
    const unlisted = await archive(
      'unlisted.tar.gz',
      [
        { path: HEADER_MEMBER, data: header() },
        { path: 'secrets.key', data: Buffer.from('x') },
      ],
      () => manifestOf([]),
    );
    expect((await restoreError(unlisted)).message).toBe(
      `${unlisted} cannot be restored: it is damaged: secrets.key is not in its manifest`,
    );
    const escaping = await archive('escaping.tar.gz', [
      { path: HEADER_MEMBER, data: header() },
      { path: '../outside', data: Buffer.from('x') },
    ]);
    expect((await restoreError(escaping)).message).toBe(
      `${escaping} cannot be restored: it holds an unexpected member ../outside`,
    );
    expect(fs.existsSync(path.join(root, 'outside'))).toBe(false);
  });

  it('refuses a database of a newer schema, as start would, before anything is moved: nothing left', async () => {
    const future = dir('data-future');
    // Migrations of a newer drover-coordinator: one that is not a breaking change, which this one
    // runs beside (restored), then a breaking one (refused, in the migrator's words).
    const record = (version: number, name: string, breaking: number) => {
      const db = openDatabase(databaseFile(future));
      migrate(db);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at, breaking) VALUES (?, ?, 'x', ?)").run(
        version,
        name,
        breaking,
      );
      db.close();
    };
    record(9998, 'later', 0);
    loadOrCreateServerKey(future);
    loadOrCreateSecretBox(future);
    const beside = path.join(backups, 'newer-not-breaking.tar.gz');
    await backup({ config: loadBackupConfig({}, { dataDir: future }), to: beside });
    expect((await restore({ from: beside, dataDir: dir('restored-beside') })).manifest.schemaVersion).toBe(9998);

    record(9999, 'future', 1);
    const breaking = path.join(backups, 'newer-schema.tar.gz');
    await backup({ config: loadBackupConfig({}, { dataDir: future }), to: breaking });
    // Into a data directory whose parents do not exist either: they are removed again too.
    const into = dir('missing-parent/y/z/data');
    expect(await restore({ from: breaking, dataDir: into }).catch((e: unknown) => e)).toMatchObject({
      code: 'refused',
      message:
        `${breaking} cannot be restored: the database has migration 9999_future of a newer drover-coordinator, ` +
        'a breaking change this one does not know: upgrade this drover-coordinator',
    });
    expect(fs.existsSync(dir('missing-parent'))).toBe(false);
    // An empty directory stays as it was.
    const empty = dir('empty-for-newer');
    fs.mkdirSync(empty);
    expect(await restore({ from: breaking, dataDir: empty }).catch((e: BackupError) => e.code)).toBe('refused');
    expect(fs.readdirSync(empty)).toEqual([]);

    // A database that SQLite cannot read: damaged, whatever its manifest says.
    const notADatabase = await archive(
      'not-a-database.tar.gz',
      [
        { path: HEADER_MEMBER, data: header() },
        { path: DATABASE_MEMBER, data: Buffer.from('x'.repeat(4096)) },
      ],
      manifestOf,
    );
    expect(await restoreError(notADatabase)).toEqual({
      code: 'refused',
      message: `${notADatabase} cannot be restored: its drover.sqlite is damaged (file is not a database)`,
    });
  });

  it('refuses a missing file and a data directory that is a file', async () => {
    const missing = path.join(backups, 'missing.tar.gz');
    expect(await restoreError(missing)).toEqual({
      code: 'refused',
      message: `cannot read ${missing}: no such file or directory (--from)`,
    });
    const file = path.join(root, 'a-file');
    fs.writeFileSync(file, '');
    const error = await restore({ from: good, dataDir: file }).catch((e: BackupError) => e);
    expect(error).toMatchObject({ code: 'refused', message: `${file} is not a directory (--data-dir)` });
  });
});

describe('the progress line', () => {
  it('is one line redrawn on a terminal, and a line every 10 s in a log', () => {
    let now = 0;
    const written: string[] = [];
    const log = progressOn({ write: (t: string) => written.push(t) }, () => now);
    log.step('copying files: starting');
    for (now = 1000; now < 25_000; now += 1000) log.update(`copying files: ${now / 1000} files`);
    log.end();
    expect(written).toEqual(['copying files: starting\n', 'copying files: 10 files\n', 'copying files: 20 files\n']);

    written.length = 0;
    now = 0;
    const tty = progressOn({ isTTY: true, write: (t: string) => written.push(t) }, () => now);
    tty.step('snapshot');
    now = 50;
    tty.update('skipped: too soon');
    now = 150;
    tty.update('50 %');
    tty.end();
    expect(written).toEqual(['\r\x1b[Ksnapshot', '\r\x1b[K50 %', '\n']);
  });
});

describe('the snapshot of the database', () => {
  it('is consistent while another connection writes, and ends: the copy restarts, then finishes in one step', async () => {
    const file = dir('busy.sqlite');
    const writer = new Database(file);
    writer.pragma('journal_mode = WAL');
    writer.exec(
      'CREATE TABLE schema_migrations (version INTEGER); CREATE TABLE pairs (id INTEGER PRIMARY KEY, text TEXT)',
    );
    const insert = writer.prepare('INSERT INTO pairs (text) VALUES (?)');
    // Two rows per transaction: a consistent snapshot holds an even number of rows.
    const pair = writer.transaction(() => {
      insert.run('x'.repeat(1000));
      insert.run('y'.repeat(1000));
    });
    writer.transaction(() => {
      for (let i = 0; i < 4000; i++) pair();
    })();
    let writes = 0;
    let writing = true;
    const loop = () => {
      if (!writing) return;
      pair();
      writes++;
      setImmediate(loop);
    };
    setImmediate(loop);
    const shown: string[] = [];
    const progress = { step: () => undefined, update: (t: string) => shown.push(t), end: () => undefined };
    const snapshot = dir('busy-snapshot.sqlite');
    try {
      await snapshotDatabase(file, snapshot, progress);
    } finally {
      writing = false;
      writer.close();
    }
    expect(writes).toBeGreaterThan(0);
    // The first step of 256 pages, then two that started over (a write came between), then the rest at once.
    expect(shown.map((t) => t.replace(/ of \d+ pages/, ''))).toEqual(
      ['0 %', '12 %', '12 %', '12 %'].map((p) => `snapshot of the database: ${p}`),
    );
    const copy = new Database(snapshot, { readonly: true });
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      const { n } = copy.prepare('SELECT count(*) AS n FROM pairs').get() as { n: number };
      expect(n % 2).toBe(0);
      expect(n).toBeGreaterThanOrEqual(8000);
    } finally {
      copy.close();
    }
  });
});

describe('the report of a backup', () => {
  const report = {
    file: '/b/drover.tar.gz',
    bytes: 3 * 1024 ** 2,
    database: { schemaVersion: 34, bytes: 10 * 1024 ** 2 },
    keys: ['server-ed25519.key', 'secrets.key'],
    seconds: 1.25,
  };
  it('names what it holds, the files left in a bucket, and the blobs deleted under it', () => {
    const s3 = loadBackupConfig(
      {
        DROVER_STORAGE_URL:
          's3://drover-files/prod?endpoint=http://127.0.0.1:9000&region=us-east-1&forcePathStyle=true',
      },
      { dataDir },
    );
    expect(
      backupReportLines(s3, { ...report, blobs: 'in the bucket', files: { copied: 0, bytes: 0, vanished: 0 } }),
    ).toEqual([
      'backed up the database (schema version 34, 10.0 MiB), server-ed25519.key and secrets.key to /b/drover.tar.gz (3.0 MiB, 1.3 s)',
      "the files are in the bucket s3://drover-files/prod/, not in this backup: back the bucket up with the store's own tools (versioning, replication)",
    ]);
    const local = loadBackupConfig({}, { dataDir });
    expect(
      backupReportLines(local, { ...report, blobs: 'included', files: { copied: 12, bytes: 2048, vanished: 2 } }),
    ).toEqual([
      'backed up the database (schema version 34, 10.0 MiB), server-ed25519.key, secrets.key and 12 files (2.0 KiB) to /b/drover.tar.gz (3.0 MiB, 1.3 s)',
      '2 files were deleted after the snapshot, before their blob was copied: restored, they are listed without content',
    ]);
  });

  it('of the keys of a coordinator on PostgreSQL names what it leaves out: the database, and files kept in the data directory', () => {
    const keys = { ...report, database: null, blobs: 'left out' as const, files: { copied: 0, bytes: 0, vanished: 0 } };
    const postgres = { DROVER_DATABASE_URL: 'postgres://drover:hunter2@db.internal/drover' };
    expect(backupReportLines(loadBackupConfig(postgres, { dataDir }), keys)).toEqual([
      'backed up server-ed25519.key and secrets.key to /b/drover.tar.gz (3.0 MiB, 1.3 s)',
      'the database is not in this backup: back it up with pg_dump (postgres://drover:****@db.internal/drover)',
      `the files are in ${dataDir}/blobs, not in this backup: back that directory up after the database (tar -C ${dataDir} -czf <file> blobs)`,
    ]);
    const bucket = 's3://drover-files/prod?endpoint=http://127.0.0.1:9000&region=us-east-1&forcePathStyle=true';
    expect(backupReportLines(loadBackupConfig({ ...postgres, DROVER_STORAGE_URL: bucket }, { dataDir }), keys)).toEqual(
      [
        'backed up server-ed25519.key and secrets.key to /b/drover.tar.gz (3.0 MiB, 1.3 s)',
        'the database is not in this backup: back it up with pg_dump (postgres://drover:****@db.internal/drover)',
      ],
    );
  });
});
