import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import type { AdmissionRequest } from '../../src/domain/model/trigger-runs.js';
import { GroupCommitExecutor, type WriteExecutor } from '../../src/db/writer/executor.js';
import { createGroupCommit } from '../../src/db/writer/group-commit.js';
import { newId } from '../../src/util/ids.js';
import { seedOrgWithAgent } from './fixture.js';

describe('group commit', () => {
  const setup = () => {
    const db = openDatabase(':memory:');
    db.exec('CREATE TABLE t (x INTEGER PRIMARY KEY)');
    const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
    const count = () => db.prepare('SELECT COUNT(*) FROM t').pluck().get() as number;
    return { db, insert, count, commit: createGroupCommit(db) };
  };

  it('runs a batch in one transaction and gives one outcome per operation', () => {
    const { db, insert, count, commit } = setup();
    const seen: boolean[] = [];
    const outcomes = commit(
      [1, 2, 3].map((x) => () => {
        seen.push(db.inTransaction);
        return insert.run(x).changes;
      }),
    );
    expect(outcomes).toEqual([1, 1, 1].map((value) => ({ ok: true, value })));
    expect(seen).toEqual([true, true, true]);
    expect(count()).toBe(3);
    expect(db.inTransaction).toBe(false);
  });

  it('rolls back only the failing operation', () => {
    const { insert, count, commit } = setup();
    const outcomes = commit([
      () => insert.run(1),
      () => {
        insert.run(2);
        insert.run(1); // duplicate: this operation fails and its insert of 2 is undone
      },
      () => insert.run(3),
    ]);
    expect(outcomes.map((o) => o.ok)).toEqual([true, false, true]);
    expect(count()).toBe(2);
  });
});

describe('group commit on a full disk', () => {
  let dir: string;
  let db: Db;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-full-'));
    db = openDatabase(path.join(dir, 'full.sqlite'));
    db.exec('CREATE TABLE t (x INTEGER PRIMARY KEY, pad BLOB)');
  });
  afterEach(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('fails the whole batch when SQLite rolled its transaction back (SQLITE_FULL), and writes none of it outside it', () => {
    // No page may be added: a small row fits in the table's page, a large one does not (SQLITE_FULL,
    // as on a disk with no space left). SQLite then rolls back the whole transaction, not only the
    // operation's savepoint: the operations after it must not run on their own, outside any
    // transaction, and commit while their callers are told they failed.
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    const insert = db.prepare('INSERT INTO t (x, pad) VALUES (?, ?)');
    const commit = createGroupCommit(db);
    let error: unknown;
    try {
      commit([() => insert.run(1, null), () => insert.run(2, Buffer.alloc(64 * 1024)), () => insert.run(3, null)]);
    } catch (e) {
      error = e;
    }
    expect((error as { code?: string } | undefined)?.code).toBe('SQLITE_FULL');
    expect(db.inTransaction).toBe(false);
    expect(db.prepare('SELECT x FROM t').pluck().all()).toEqual([]);
    // With room again, the same batch commits whole.
    db.pragma('max_page_count = 1073741823');
    expect(
      commit([() => insert.run(1, null), () => insert.run(2, Buffer.alloc(64 * 1024)), () => insert.run(3, null)]).map(
        (o) => o.ok,
      ),
    ).toEqual([true, true, true]);
  });
});

describe("the executor's last failure (the health check's)", () => {
  it('is the error of a commit that failed as a whole, until one succeeds', async () => {
    const db = openDatabase(':memory:');
    db.pragma('foreign_keys = ON');
    // A deferred foreign key fails at COMMIT: the whole group commit fails, as on a full disk.
    db.exec(`CREATE TABLE parent (id INTEGER PRIMARY KEY);
      CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)`);
    const writes = new GroupCommitExecutor(db);
    const orphan = db.prepare('INSERT INTO child (p) VALUES (42)');
    const parent = db.prepare('INSERT INTO parent (id) VALUES (?)');
    expect(writes.lastFailure).toBeNull();
    await expect(writes.run(() => orphan.run())).rejects.toThrow(/FOREIGN KEY/);
    expect(writes.lastFailure?.message).toMatch(/FOREIGN KEY/);
    await writes.run(() => parent.run(1));
    expect(writes.lastFailure).toBeNull();
    await writes.close();
    db.close();
  });
});

describe("the executor's hold (the checkpoint thread's copy to the WAL's end)", () => {
  it('keeps the commits, in order, until released, while the event loop goes on', async () => {
    const db = openDatabase(':memory:');
    db.exec('CREATE TABLE t (n INTEGER)');
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    const rows = () => db.prepare('SELECT n FROM t ORDER BY rowid').pluck().all();
    const writes = new GroupCommitExecutor(db);
    const release = writes.hold();
    const committed: number[] = [];
    const first = writes.run(() => insert.run(1)).then(() => committed.push(1));
    await new Promise((resolve) => setTimeout(resolve, 20)); // turns of the event loop go by
    const second = writes.run(() => insert.run(2)).then(() => committed.push(2));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(rows()).toEqual([]);
    expect(committed).toEqual([]);
    release();
    release(); // twice is once
    await Promise.all([first, second]);
    expect(rows()).toEqual([1, 2]);
    expect(committed).toEqual([1, 2]);
    // A flush (and a close) commits even while held.
    writes.hold();
    const third = writes.run(() => insert.run(3));
    await writes.flush();
    await third;
    expect(rows()).toEqual([1, 2, 3]);
    await writes.close();
    db.close();
  });
});

const NOW = Date.UTC(2030, 0, 1, 10, 0, 5);
const none = { perMinute: null, perHour: null, perDay: null };
describe('group-commit write executor', () => {
  let dir: string;
  let db: Db;
  let writes: WriteExecutor;
  let repos: Repositories;
  let orgId: string;
  let agentId: string;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-writer-'));
    const file = path.join(dir, 'drover.sqlite');
    db = openDatabase(file);
    migrate(db);
    writes = new GroupCommitExecutor(db);
    repos = createSqliteRepositories(db, writes);
    ({ orgId, agentId } = await seedOrgWithAgent(db, repos));
  });
  afterEach(async () => {
    await writes.close();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const admission = (over: { agentId?: string; perMinute?: number } = {}): AdmissionRequest => ({
    job: {
      id: newId(),
      orgId,
      kind: 'trigger',
      source: 'webhook',
      triggerId: 'trigger-1',
      agentId: over.agentId ?? agentId,
      workflowId: 'workflow-1',
      workflowName: 'build',
      ref: null,
      debug: false,
      params: { n: 1 },
      forced: false,
      forceReason: null,
      apiTokenId: null,
      userId: null,
      timeoutMs: null,
      createdAt: new Date(NOW).toISOString(),
    },
    now: NOW,
    idempotency: null,
    token: null,
    workflowLimits: { ...none, perMinute: over.perMinute ?? null },
  });
  const jobCount = () => db.prepare('SELECT COUNT(*) FROM jobs').pluck().get() as number;

  it('serialises read-decide-write operations: a limit of 5 admits exactly 5 of 40 concurrent calls', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, () => repos.triggerRuns.admit(admission({ perMinute: 5 }))),
    );
    expect(outcomes.filter((o) => o.outcome === 'admitted')).toHaveLength(5);
    expect(outcomes.filter((o) => o.outcome === 'refused')).toHaveLength(35);
    expect(jobCount()).toBe(40);
  });

  it('answers only after the commit, visible to the reading connection', async () => {
    const outcome = await repos.triggerRuns.admit(admission());
    expect(outcome.outcome).toBe('admitted');
    const jobId = outcome.outcome === 'admitted' ? outcome.jobId : '';
    expect((await repos.jobs.findById(jobId))?.params).toEqual({ n: 1 });
  });

  it('fails one operation with its SQLite error code and commits the others of the batch', async () => {
    const results = await Promise.allSettled([
      repos.triggerRuns.admit(admission()),
      repos.triggerRuns.admit(admission({ agentId: 'no-such-agent' })),
      repos.triggerRuns.admit(admission()),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const error = (results[1] as PromiseRejectedResult).reason as Error & { code?: string };
    expect(error.code).toBe('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect(jobCount()).toBe(2);
  });

  it('runs job moves, nonces and audit entries through the same commit', async () => {
    const admitted = await repos.triggerRuns.admit(admission());
    const jobId = admitted.outcome === 'admitted' ? admitted.jobId : '';
    const at = new Date(NOW + 1000).toISOString();
    const started = await repos.jobs.start(agentId, jobId, { at, deadlineGraceMs: 1000 });
    expect(started.outcome).toBe('applied');
    expect(started.job?.status).toBe('running');
    expect((await repos.jobs.start(agentId, jobId, { at, deadlineGraceMs: 1000 })).outcome).toBe('unchanged');
    expect(await repos.agents.rememberNonce(agentId, 'nonce-0123456789ab', NOW + 60_000, NOW)).toBe(true);
    expect(await repos.agents.rememberNonce(agentId, 'nonce-0123456789ab', NOW + 60_000, NOW)).toBe(false);
    await repos.audit.insertMany([
      { orgId, actorType: 'system', actorId: null, action: 'auth.lockout', metadata: { a: 1 }, createdAt: at },
    ]);
    expect((await repos.audit.list(orgId, { limit: 10 })).map((e) => e.action)).toContain('auth.lockout');
  });

  it('flushes what was submitted on close and refuses calls after it', async () => {
    const pending = repos.triggerRuns.admit(admission());
    await writes.close();
    expect((await pending).outcome).toBe('admitted');
    expect(jobCount()).toBe(1);
    await expect(repos.triggerRuns.admit(admission())).rejects.toThrow(/closed/);
  });
});
