import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { POSTGRES, SQLITE } from '../../src/db/sql/dialect.js';
import { all, lock, one, rows, run, runFlowAsync, runFlowSync, type Flow, type Op } from '../../src/db/sql/flow.js';
import type { Database } from '../../src/db/sql/database.js';
import { PostgresDatabase } from '../../src/db/sql/postgres.js';
import { isUniqueViolation, jsonRecords } from '../../src/db/sql/rows.js';
import { SqliteDatabase } from '../../src/db/sql/sqlite.js';
import { command, manyRows, numberParameters, query, values } from '../../src/db/sql/statement.js';
import { GroupCommitExecutor } from '../../src/db/writer/executor.js';
import { freshPostgresDatabase, type TestDatabase } from '../postgres/database.js';

describe('portable statements', () => {
  it('numbers `?` for PostgreSQL, outside quoted strings, quoted names and comments', () => {
    expect(numberParameters(`SELECT '?', "a?" FROM t -- why?\nWHERE a = ? AND b IN (?, ?)`)).toEqual({
      text: `SELECT '?', "a?" FROM t -- why?\nWHERE a = $1 AND b IN ($2, $3)`,
      names: null,
    });
  });

  it('gives each distinct @name one number, and lists the names in that order', () => {
    expect(numberParameters(`INSERT INTO t VALUES (@at, @id, @at) -- '@x'`)).toEqual({
      text: `INSERT INTO t VALUES ($1, $2, $1) -- '@x'`,
      names: ['at', 'id'],
    });
  });

  it('refuses a text that mixes ? and @name', () => {
    expect(() => numberParameters('SELECT ? AS a, @b AS b')).toThrow(/mixes \? and @name/);
  });

  it("compiles a text once per dialect, with that dialect's fragments", () => {
    const s = query<{ id: string }>((d) => `SELECT id FROM t WHERE a = ? ORDER BY ${d.insertionOrder}`);
    expect(s.compiled(SQLITE).text).toBe('SELECT id FROM t WHERE a = ? ORDER BY rowid');
    expect(s.compiled(POSTGRES).text).toBe('SELECT id FROM t WHERE a = $1 ORDER BY seq');
    expect(s.compiled(POSTGRES)).toBe(s.compiled(POSTGRES));
  });
});

describe('flow runners', () => {
  const A = values<number, [number]>('A');
  const B = command<[number]>('B');
  function* twice(x: number): Flow<number> {
    const doubled = (yield* one(A, [x])) ?? 0;
    yield* run(B, [doubled]);
    return doubled;
  }
  function* outer(): Flow<number[]> {
    const results: number[] = [];
    for (const x of [1, 2]) results.push(yield* twice(x));
    try {
      yield* run(B, [-1]);
    } catch (error) {
      results.push((error as Error).message.length);
    }
    return results;
  }
  const answer = (op: Op): unknown => {
    if (op.kind === 'lock' || op.kind === 'rows' || op.kind === 'script') return undefined;
    const [x] = op.params as number[];
    if (op.kind === 'run' && (x as number) < 0) throw new Error('nope');
    return op.kind === 'one' ? (x as number) * 2 : 1;
  };

  it('answers each step at once on SQLite, nested flows included, and throws a failed step into the flow', () => {
    const seen: Op[] = [];
    const result = runFlowSync((op) => (seen.push(op), answer(op)), outer());
    expect(result).toEqual([2, 4, 4]);
    expect(seen.map((op) => op.kind)).toEqual(['one', 'run', 'one', 'run', 'run']);
  });

  it('answers each step when its promise settles on PostgreSQL, with the same results', async () => {
    expect(await runFlowAsync(async (op) => answer(op), outer())).toEqual([2, 4, 4]);
  });

  it('lets an error the flow does not catch end it', async () => {
    function* failing(): Flow<void> {
      yield* run(B, [-1]);
    }
    expect(() => runFlowSync(answer, failing())).toThrow('nope');
    await expect(runFlowAsync(async (op) => answer(op), failing())).rejects.toThrow('nope');
  });
});

interface Row {
  id: number;
  flag: number;
  doc: string | null;
  at: string;
  big: number;
}

const ROWS = query<Row, [number]>('SELECT id, flag, doc, at, big FROM t WHERE id >= ? ORDER BY id');
const IDS = values<number, []>('SELECT id FROM t ORDER BY id');
const COUNT = values<number, []>('SELECT count(*) FROM t');
const INSERT = command<{ id: number; flag: 1 | 0; doc: string | null; at: string; big: number }>(
  'INSERT INTO t (id, flag, doc, at, big) VALUES (@id, @flag, @doc, @at, @big)',
);
const FLIP = command<[number]>('UPDATE t SET flag = NOT flag WHERE id = ?');
const MANY = { id: 'integer', flag: 'boolean', doc: 'json', at: 'timestamptz', big: 'bigint' };
const INSERT_MANY = command<[string]>(
  (d) =>
    `INSERT INTO t (id, flag, doc, at, big) SELECT r.id, r.flag, r.doc, r.at, r.big FROM ${d.jsonRecords('?', 'r', MANY)}`,
);
// Rows after a leading parameter (the `big` of every row): SQLite's one row at a time, PostgreSQL's all at once.
const INSERT_ROWS = manyRows<[number], [id: number, at: string], number>(
  'INSERT INTO t (big, id, at, flag) VALUES (?, ?, ?, TRUE) ON CONFLICT (id) DO NOTHING',
  `INSERT INTO t (big, id, at, flag)
   SELECT ?, (value ->> 0)::integer, (value ->> 1)::timestamptz, TRUE FROM json_array_elements(?::json)
   ON CONFLICT (id) DO NOTHING RETURNING id`,
  ([id]) => id,
);

/** The same cases on both databases: what a repository written once relies on. */
function behavesAlike(kind: 'sqlite' | 'postgres', database: () => Database) {
  const row = (id: number) => ({
    id,
    flag: 1 as const,
    doc: '{"b":1,"a":[true]}',
    at: '2030-01-02T03:04:05.678Z',
    big: 2 ** 40,
  });

  it(`${kind}: reads rows as SQLite gives them: flags 1 or 0, JSON as written, instants as ISO strings, bigints as numbers`, async () => {
    const db = database();
    expect(await db.run(INSERT, row(1))).toBe(1);
    expect(await db.run(INSERT, { ...row(2), flag: 0, doc: null })).toBe(1);
    expect(await db.all(ROWS, [1])).toEqual([row(1), { ...row(2), flag: 0, doc: null }]);
    expect(await db.one(ROWS, [3])).toBeNull();
    expect(await db.all(IDS, [])).toEqual([1, 2]);
    expect(await db.one(COUNT, [])).toBe(2);
    expect(await db.run(FLIP, [2])).toBe(1);
    expect((await db.one(ROWS, [2]))?.flag).toBe(1);
  });

  it(`${kind}: commits a transaction's flow whole, or nothing of it when it throws`, async () => {
    const db = database();
    await expect(
      db.transaction(function* () {
        yield* run(INSERT, row(1));
        yield* run(INSERT, row(1));
      }),
    ).rejects.toSatisfy(isUniqueViolation);
    expect(await db.one(COUNT, [])).toBe(0);
    const ids = await db.transaction(function* () {
      yield* lock('test', 'one');
      yield* run(INSERT, row(1));
      yield* run(INSERT, row(2));
      return yield* all(IDS, []);
    });
    expect(ids).toEqual([1, 2]);
  });

  it(`${kind}: runs a write flow, atomic or not, and a flow of reads`, async () => {
    const db = database();
    expect(await db.write(() => run(INSERT, row(1)))).toBe(1);
    expect(await db.write(() => run(INSERT, row(2)), { atomic: false })).toBe(1);
    expect(await db.read(() => all(IDS, []))).toEqual([1, 2]);
  });

  it(`${kind}: writes many rows in one statement from a JSON array of objects (jsonRecords)`, async () => {
    const db = database();
    const records = [
      { id: 1, flag: true, doc: { b: 1, a: [true] }, at: row(1).at, big: 2 ** 40 },
      { id: 2, flag: false, doc: null, at: row(2).at, big: 2 ** 40 },
    ];
    expect(await db.run(INSERT_MANY, [jsonRecords(MANY, records)])).toBe(2);
    expect(await db.all(ROWS, [1])).toEqual([row(1), { ...row(2), flag: 0, doc: null }]);
  });

  it(`${kind}: writes many rows after leading parameters and gives those stored: a row stored before, or again in the batch, is skipped`, async () => {
    const db = database();
    const at = row(1).at;
    expect(await db.run(INSERT, row(3))).toBe(1);
    const stored = await db.write(() =>
      rows(
        INSERT_ROWS,
        [2 ** 40],
        [
          [1, at],
          [3, at],
          [2, at],
          [1, '2031-01-01T00:00:00.000Z'],
        ],
      ),
    );
    expect(stored).toEqual([
      [1, at],
      [2, at],
    ]);
    expect(await db.all(ROWS, [1])).toEqual([{ ...row(1), doc: null }, { ...row(2), doc: null }, row(3)]);
    expect(await db.write(() => rows(INSERT_ROWS, [0], []))).toEqual([]);
  });

  it(`${kind}: refuses a named statement run without one of its names`, async () => {
    await expect(database().run(INSERT, { id: 1 } as never)).rejects.toThrow();
  });
}

describe('SQLite', () => {
  let db: Db;
  let database: SqliteDatabase;
  beforeEach(() => {
    db = openDatabase(':memory:');
    db.exec(
      'CREATE TABLE t (id INTEGER PRIMARY KEY, flag INTEGER NOT NULL, doc TEXT, at TEXT NOT NULL, big INTEGER NOT NULL)',
    );
    database = new SqliteDatabase(db, new GroupCommitExecutor(db));
  });
  afterEach(() => db.close());

  behavesAlike('sqlite', () => database);

  it('prepares a statement once per connection', () => {
    expect(database.prepare(IDS)).toBe(database.prepare(IDS));
    const other = openDatabase(':memory:');
    try {
      other.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
      expect(new SqliteDatabase(other, new GroupCommitExecutor(other)).prepare(IDS)).not.toBe(database.prepare(IDS));
    } finally {
      other.close();
    }
  });

  it('takes the write lock at BEGIN when a transaction asks for it (immediate)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-sql-'));
    const file = path.join(dir, 'x.sqlite');
    const mine = openDatabase(file);
    const other = openDatabase(file);
    try {
      mine.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
      other.pragma('busy_timeout = 0');
      const onFile = new SqliteDatabase(mine, new GroupCommitExecutor(mine));
      const otherCanWrite = () => {
        try {
          other.exec('BEGIN IMMEDIATE; ROLLBACK');
          return true;
        } catch {
          return false;
        }
      };
      const seen: boolean[] = [];
      for (const immediate of [false, true]) {
        await onFile.transaction(
          function* () {
            yield* all(IDS, []);
            seen.push(otherCanWrite());
          },
          { immediate },
        );
      }
      expect(seen).toEqual([true, false]);
    } finally {
      other.close();
      mine.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs a write flow inside the group commit: synchronously, in its transaction', async () => {
    const inTransaction: boolean[] = [];
    await database.write(function* () {
      inTransaction.push(db.inTransaction);
      yield* run(FLIP, [1]);
      inTransaction.push(db.inTransaction);
    });
    expect(inTransaction).toEqual([true, true]);
  });
});

describe('PostgreSQL', () => {
  let test: TestDatabase;
  let pool: pg.Pool;
  let database: PostgresDatabase;
  beforeAll(async () => {
    test = await freshPostgresDatabase();
    pool = new pg.Pool({ connectionString: test.url, max: 2 });
    // A connection still closing when the database is dropped under it (afterAll) is ended by the
    // server: the pool drops it, and the error is not this test's.
    pool.on('error', () => undefined);
    database = new PostgresDatabase(pool);
    await pool.query(
      'CREATE TABLE t (id integer PRIMARY KEY, flag boolean NOT NULL, doc json, at timestamptz NOT NULL, big bigint NOT NULL)',
    );
  });
  beforeEach(async () => {
    await pool.query('DELETE FROM t');
  });
  afterAll(async () => {
    await pool?.end();
    await test?.drop();
  });

  behavesAlike('postgres', () => database);
});
