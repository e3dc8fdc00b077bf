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
