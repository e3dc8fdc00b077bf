import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { WriteBatcher } from '../../src/db/write-batcher.js';

function setup() {
  const db = openDatabase(':memory:');
  db.exec('CREATE TABLE t (x INTEGER PRIMARY KEY)');
  const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
  const count = () => (db.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n;
  return { db, insert, count, batcher: new WriteBatcher(db) };
}

describe('WriteBatcher', () => {
  it('runs the operations of one tick in one transaction and resolves after the commit', async () => {
    const { db, insert, count, batcher } = setup();
    const seen: boolean[] = [];
    const results = await Promise.all(
      [1, 2, 3].map((x) =>
        batcher.run(() => {
          seen.push(db.inTransaction);
          return insert.run(x).changes;
        }),
      ),
    );
    expect(results).toEqual([1, 1, 1]);
    expect(seen).toEqual([true, true, true]);
    expect(count()).toBe(3);
    expect(db.inTransaction).toBe(false);
  });

  it('rolls back only the failing operation', async () => {
    const { insert, count, batcher } = setup();
    const outcomes = await Promise.allSettled([
      batcher.run(() => insert.run(1)),
      batcher.run(() => {
        insert.run(2);
        insert.run(1); // duplicate: this op fails and its insert of 2 is undone
      }),
      batcher.run(() => insert.run(3)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(count()).toBe(2);
  });

  it('serialises operations so that read-decide-write needs no lock', async () => {
    const { db, batcher } = setup();
    db.exec('CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0)');
    const read = db.prepare('SELECT n FROM counter');
    const write = db.prepare('UPDATE counter SET n = ?');
    const limit = 5;
    const admitted = await Promise.all(
      Array.from({ length: 20 }, () =>
        batcher.run(() => {
          const { n } = read.get() as { n: number };
          if (n >= limit) return false;
          write.run(n + 1);
          return true;
        }),
      ),
    );
    expect(admitted.filter(Boolean)).toHaveLength(limit);
  });

  it('flush() commits pending operations at once', async () => {
    const { insert, count, batcher } = setup();
    const pending = batcher.run(() => insert.run(1));
    batcher.flush();
    expect(count()).toBe(1);
    await pending;
  });
});
