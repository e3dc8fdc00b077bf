import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { onWrite, openDatabase, type Db } from '../../src/db/database.js';

describe('onWrite', () => {
  let db: Db;
  let signals: number;
  beforeEach(() => {
    db = openDatabase(':memory:');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
    signals = 0;
    onWrite(db, () => signals++);
  });
  afterEach(() => db.close());

  it('signals after every statement that can write, however it is run', () => {
    db.prepare('INSERT INTO t (v) VALUES (?)').run('a');
    expect(signals).toBe(1);
    expect(db.prepare('INSERT INTO t (v) VALUES (?) RETURNING id').get('b')).toEqual({ id: 2 });
    expect(signals).toBe(2);
    expect(db.prepare("UPDATE t SET v = v || '!' RETURNING v").all()).toHaveLength(2);
    expect(signals).toBe(3);
    const rows = [...db.prepare('DELETE FROM t RETURNING id').iterate()];
    expect(rows).toHaveLength(2);
    expect(signals).toBeGreaterThanOrEqual(4);
    const before = signals;
    db.exec("INSERT INTO t (v) VALUES ('c')");
    expect(signals).toBe(before + 1);
  });

  it('signals inside transactions, and for a write that failed', () => {
    const insert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
    db.transaction(() => {
      insert.run(1, 'a');
      insert.run(2, 'b');
    })();
    expect(signals).toBe(2);
    expect(() => insert.run(1, 'again')).toThrow(/UNIQUE/);
    expect(signals).toBe(3);
  });

  it('stays quiet for read-only statements', () => {
    db.prepare('SELECT count(*) FROM t').get();
    db.prepare('SELECT * FROM t').all();
    const rows = [...db.prepare('SELECT * FROM t').iterate()];
    expect(rows).toEqual([]);
    db.pragma('user_version');
    expect(signals).toBe(0);
  });

  it('can be removed, and is refused for a connection openDatabase did not make', async () => {
    const remove = onWrite(db, () => signals++);
    remove();
    db.prepare('INSERT INTO t (v) VALUES (?)').run('a');
    expect(signals).toBe(1);
    const { default: Database } = await import('better-sqlite3');
    const plain = new Database(':memory:');
    expect(() => onWrite(plain, () => {})).toThrow('not opened by openDatabase');
    plain.close();
  });
});

describe('openDatabase', () => {
  it('keeps the database and its -wal and -shm files private, whatever the umask or the directory', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-db-mode-'));
    const previous = process.umask(0o022);
    try {
      fs.chmodSync(dir, 0o755);
      const file = path.join(dir, 'drover.sqlite');
      const db = openDatabase(file);
      db.exec('CREATE TABLE t (v TEXT)');
      db.prepare('INSERT INTO t VALUES (?)').run('x');
      const modes = () => ['', '-wal', '-shm'].map((s) => fs.statSync(`${file}${s}`).mode & 0o777);
      expect(modes()).toEqual([0o600, 0o600, 0o600]);
      db.close();
      // Left readable by an earlier version: tightened at the next open.
      fs.chmodSync(file, 0o644);
      const again = openDatabase(file);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(again.prepare('SELECT v FROM t').get()).toEqual({ v: 'x' });
      again.close();
    } finally {
      process.umask(previous);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
