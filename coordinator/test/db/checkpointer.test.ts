import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startCheckpointer, type Checkpointer } from '../../src/db/checkpointer.js';
import { openDatabase, type Db } from '../../src/db/database.js';

let dir: string;
let db: Db;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-checkpointer-'));
  db = openDatabase(path.join(dir, 'drover.sqlite'));
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
});
afterEach(() => {
  if (db.open) db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const logger = pino({ level: 'silent' });
const autocheckpoint = () => db.pragma('wal_autocheckpoint', { simple: true }) as number;
const fileSize = (name: string) => fs.statSync(path.join(dir, name)).size;
/** The frames in the WAL (read with no checkpoint thread running: a checkpoint of its would make it -1). */
const walFrames = () => (db.pragma('wal_checkpoint(PASSIVE)') as [{ log: number }])[0].log;

/** Writes ~2,500 pages (4 KiB rows, one transaction each, as a steady write load would). */
function writeLoad(rows = 2500): void {
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  for (let i = 0; i < rows; i++) insert.run('x'.repeat(4000));
}

describe('startCheckpointer', () => {
  it('checkpoints light writes on the request connection, never on commit, without a thread', async () => {
    // However busy the machine running the test: no look counts as slow.
    const checkpointer = startCheckpointer(db, { intervalMs: 20, logger, slowLookMs: 10_000 });
    try {
      expect(autocheckpoint()).toBe(0);
      const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
      for (let i = 0; i < 20; i++) {
        insert.run('x'.repeat(4000));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      // The looks copy the few frames written between them into the database file (which,
      // without a checkpoint, would not grow: every page would stay in the WAL).
      await vi.waitFor(() => expect(fileSize('drover.sqlite')).toBeGreaterThan(20 * 4000), {
        timeout: 2000,
        interval: 10,
      });
      expect(checkpointer.runsOn).toBe('request-thread');
    } finally {
      await checkpointer.stop();
    }
  });

  it('moves the checkpoints to a thread once a look finds a heavy write load', async () => {
    const checkpointer = startCheckpointer(db, { intervalMs: 20, logger, threadFrames: 1000 });
    try {
      writeLoad();
      await vi.waitFor(() => expect(checkpointer.runsOn).toBe('own-thread'), { timeout: 5000, interval: 10 });
      const before = fileSize('drover.sqlite');
      writeLoad();
      // ~10 MB more. The request connection neither checkpoints on commit nor looks any more, so
      // the database file grows only by the thread's checkpoints.
      expect(autocheckpoint()).toBe(0);
      await vi.waitFor(() => expect(fileSize('drover.sqlite') - before).toBeGreaterThan(9_000_000), {
        timeout: 5000,
        interval: 25,
      });
    } finally {
      await checkpointer.stop();
    }
  });

  it('moves them to the thread too when a checkpoint on the request thread is slow (the disk syncs slowly)', async () => {
    const checkpointer = startCheckpointer(db, { intervalMs: 20, logger, slowLookMs: -1 });
    try {
      const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
      for (let i = 0; i < 2; i++) {
        insert.run('light');
        await new Promise((resolve) => setTimeout(resolve, 60));
        expect(checkpointer.runsOn).toBe('request-thread'); // one or two slow looks are not enough
      }
      insert.run('light');
      await vi.waitFor(() => expect(checkpointer.runsOn).toBe('own-thread'), { timeout: 5000, interval: 10 });
    } finally {
      await checkpointer.stop();
    }
  });

  it('restores SQLite checkpoints on commit when a checkpoint on the request thread fails', async () => {
    const errors: string[] = [];
    const watched = pino({ level: 'error' }, { write: (line: string) => errors.push(line) });
    const prepare = db.prepare.bind(db);
    const failing = {
      get: () => {
        throw new Error('disk I/O error');
      },
    };
    db.prepare = ((sql: string) =>
      sql.startsWith('PRAGMA wal_checkpoint') ? failing : prepare(sql)) as typeof db.prepare;
    const checkpointer = startCheckpointer(db, { intervalMs: 20, logger: watched });
    db.prepare('INSERT INTO t (v) VALUES (?)').run('light');
    await vi.waitFor(() => expect(autocheckpoint()).toBe(1000), { timeout: 5000, interval: 10 });
    expect(checkpointer.runsOn).toBe('commit');
    expect(errors.join('')).toContain('WAL checkpoint on the request thread failed');
    await checkpointer.stop();
  });

  it('tells a long run of writes when the WAL has been copied whole, which the next write restarts', async () => {
    const checkpointer = startCheckpointer(db, { intervalMs: 20, logger });
    try {
      writeLoad(2000);
      // ~2,000 frames: it waits until they have all been copied into the database file.
      const t0 = Date.now();
      await checkpointer.walBelow(100, 5000);
      expect(Date.now() - t0).toBeLessThan(5000);
      // The next write starts the WAL again from its beginning.
      db.prepare('INSERT INTO t (v) VALUES (?)').run('y');
      const [{ log }] = db.pragma('wal_checkpoint(PASSIVE)') as [{ log: number }];
      expect(log).toBeLessThan(100);
      // It never waits longer than asked.
      const t1 = Date.now();
      await checkpointer.walBelow(0, 200);
      expect(Date.now() - t1).toBeLessThan(1000);
    } finally {
      await checkpointer.stop();
    }
  });

  it('makes a WAL the thread cannot copy whole (writes go on during its checkpoints) restart at the next write', async () => {
    const checkpointer = startCheckpointer(db, { intervalMs: 20, logger, threadFrames: 1000 });
    // Writes every few milliseconds, as trigger runs go on during a retention sweep: each
    // checkpoint of the thread ends with frames it did not copy.
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    const writes = setInterval(() => insert.run('x'.repeat(4000)), 2);
    try {
      writeLoad(3000);
      await vi.waitFor(() => expect(checkpointer.runsOn).toBe('own-thread'), { timeout: 5000, interval: 10 });
      writeLoad(3000); // a long run of writes: ~3,000 frames more
      await checkpointer.walBelow(1000, 5000);
      insert.run('y');
    } finally {
      clearInterval(writes);
      await checkpointer.stop();
    }
    // Restarted: the WAL holds what was written since, not the run's thousands of frames.
    expect(walFrames()).toBeLessThan(1000);
  });

  /**
   * A WAL long enough for the thread, then ~5,000 frames more, a few at a time, for a second or
   * so (none while `paused()`, as the group commit writes none while held): without a restart the
   * WAL would hold over 10,000 frames (a row a frame at least). The frames in the WAL at the end.
   */
  async function steadyWritesAfterALongWal(checkpointer: Checkpointer, paused = () => false): Promise<number> {
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    let writes: NodeJS.Timeout | undefined;
    try {
      writeLoad(1500);
      await vi.waitFor(() => expect(checkpointer.runsOn).toBe('own-thread'), { timeout: 5000, interval: 10 });
      writeLoad(4000);
      let written = 0;
      writes = setInterval(() => {
        for (let i = 0; i < 10 && written < 5000 && !paused(); i++, written++) insert.run('x'.repeat(4000));
      }, 2);
      await vi.waitFor(() => expect(written).toBe(5000), { timeout: 10_000, interval: 20 });
    } finally {
      clearInterval(writes);
      await checkpointer.stop();
    }
    return walFrames();
  }

  it('restarts a long WAL under steady writes by itself, finishing the copy on the request thread', async () => {
    const checkpointer = startCheckpointer(db, { intervalMs: 20, logger, threadFrames: 1000, restartFrames: 2000 });
    expect(await steadyWritesAfterALongWal(checkpointer)).toBeLessThan(6000);
    expect(checkpointer.finishedCopies.requestThread).toBeGreaterThan(0);
  });

  it('copies a long WAL to its end on the thread while the hot writes are held, the event loop free', async () => {
    let held = 0;
    const holdWrites = () => {
      held++;
      let released = false;
      return () => {
        if (!released) held--;
        released = true;
      };
    };
    const options = { intervalMs: 20, logger, threadFrames: 1000, restartFrames: 2000, holdWrites };
    const checkpointer = startCheckpointer(db, options);
    expect(await steadyWritesAfterALongWal(checkpointer, () => held > 0)).toBeLessThan(6000);
    expect(held).toBe(0);
    expect(checkpointer.finishedCopies).toMatchObject({ requestThread: 0 });
    expect(checkpointer.finishedCopies.thread).toBeGreaterThan(0);
  });

  it('copies the end on the request thread after a write the hold did not cover made the thread miss it', async () => {
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    // A write of another kind than the group commit's slips in during each copy of the thread's.
    const holdWrites = () => {
      setImmediate(() => insert.run('slipped in'));
      return () => {};
    };
    const options = { intervalMs: 20, logger, threadFrames: 1000, restartFrames: 2000, holdWrites };
    const checkpointer = startCheckpointer(db, options);
    try {
      writeLoad(1500);
      await vi.waitFor(() => expect(checkpointer.runsOn).toBe('own-thread'), { timeout: 5000, interval: 10 });
      writeLoad(3000);
      await checkpointer.walBelow(2000, 5000);
      insert.run('y');
    } finally {
      await checkpointer.stop();
    }
    expect(walFrames()).toBeLessThan(100);
    expect(checkpointer.finishedCopies).toEqual({ thread: 0, requestThread: 1 });
  });

  it('stops cleanly: the database closes and reopens with every row', async () => {
    for (const rows of [30, 3000]) {
      const checkpointer = startCheckpointer(db, { intervalMs: 20, logger });
      writeLoad(rows);
      if (rows > 1000) await vi.waitFor(() => expect(checkpointer.runsOn).toBe('own-thread'), { timeout: 5000 });
      await checkpointer.stop();
      db.close();
      const again = openDatabase(path.join(dir, 'drover.sqlite'));
      expect(again.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: rows });
      again.exec('DELETE FROM t');
      again.close();
      // The last connection's close checkpointed and removed the WAL.
      expect(fs.existsSync(path.join(dir, 'drover.sqlite-wal'))).toBe(false);
      db = openDatabase(path.join(dir, 'drover.sqlite'));
    }
  });

  it('restores SQLite checkpoints on commit when the thread fails', async () => {
    const errors: string[] = [];
    const watched = pino({ level: 'error' }, { write: (line: string) => errors.push(line) });
    // The thread cannot open a database file that is no longer at its path.
    const checkpointer = startCheckpointer(db, { intervalMs: 20, logger: watched });
    fs.renameSync(path.join(dir, 'drover.sqlite'), path.join(dir, 'moved.sqlite'));
    writeLoad();
    await vi.waitFor(() => expect(autocheckpoint()).toBe(1000), { timeout: 5000, interval: 25 });
    expect(checkpointer.runsOn).toBe('commit');
    expect(errors.join('')).toContain('WAL checkpoint thread');
    await checkpointer.stop();
  });

  it('starts nothing for an in-memory database', async () => {
    const memory = openDatabase(':memory:');
    const checkpointer = startCheckpointer(memory, { intervalMs: 20, logger });
    expect(memory.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await checkpointer.stop();
    memory.close();
  });
});
