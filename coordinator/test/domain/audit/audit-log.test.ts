import { describe, expect, it } from 'vitest';
import type { AuditEntryInput, AuditRepository } from '../../../src/domain/model/audit.js';
import { AuditLog } from '../../../src/domain/audit/audit-log.js';

function recordingRepo(fail = false) {
  const batches: AuditEntryInput[][] = [];
  const repo: AuditRepository = {
    async insertMany(entries) {
      if (fail) throw new Error('disk full');
      batches.push([...entries]);
    },
    insertTaken(take) {
      return this.insertMany(take());
    },
    async list() {
      return [];
    },
  };
  return { repo, batches };
}

const clock = { now: () => Date.parse('2026-01-02T03:04:05.678Z') };

describe('AuditLog', () => {
  it('commits entries recorded in the same tick as one batch and resolves after the commit', async () => {
    const { repo, batches } = recordingRepo();
    const log = new AuditLog(repo, clock);
    const entry = { orgId: 'o', actorType: 'system' as const, actorId: null, action: 'auth.lockout' as const };
    const done = Promise.all([log.record(entry), log.record(entry), log.record(entry)]);
    expect(batches).toHaveLength(0);
    await done;
    expect(batches).toHaveLength(1);
    expect(batches[0]).toHaveLength(3);
    expect(batches[0]![0]!.createdAt).toBe('2026-01-02T03:04:05.678Z');
  });

  it('starts a new batch for entries recorded after a flush', async () => {
    const { repo, batches } = recordingRepo();
    const log = new AuditLog(repo, clock);
    const entry = { orgId: 'o', actorType: 'system' as const, actorId: null, action: 'auth.lockout' as const };
    await log.record(entry);
    await log.record(entry);
    expect(batches.map((b) => b.length)).toEqual([1, 1]);
  });

  it('rejects every waiting record when the batch cannot be written', async () => {
    const { repo } = recordingRepo(true);
    const log = new AuditLog(repo, clock);
    const entry = { orgId: 'o', actorType: 'system' as const, actorId: null, action: 'auth.lockout' as const };
    const results = await Promise.allSettled([log.record(entry), log.record(entry)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });

  it('flush() writes pending entries at once (used at shutdown)', async () => {
    const { repo, batches } = recordingRepo();
    const log = new AuditLog(repo, clock);
    const pending = log.record({ orgId: 'o', actorType: 'system', actorId: null, action: 'auth.lockout' });
    await log.flush();
    expect(batches).toHaveLength(1);
    await pending;
  });

  it('takes the entries recorded until its write runs, once (a write run twice inserts the same ones)', async () => {
    const taken: AuditEntryInput[][] = [];
    let runWrite: () => void = () => {};
    // As the group commit: the write runs at the end of the event-loop turn, maybe twice.
    const repo: AuditRepository = {
      insertMany: async () => {},
      insertTaken: (take) =>
        new Promise<void>((resolve) => {
          runWrite = () => {
            taken.push([...take()], [...take()]);
            resolve();
          };
        }),
      list: async () => [],
    };
    const log = new AuditLog(repo, clock);
    const entry = (i: number) => ({
      orgId: 'o',
      actorType: 'system' as const,
      actorId: null,
      action: 'auth.lockout' as const,
      metadata: { i },
    });
    const first = log.record(entry(1));
    await Promise.resolve(); // the batch is handed to the repository at the end of the tick
    const second = log.record(entry(2)); // a later macrotask of the same turn: joins the batch
    runWrite();
    const third = log.record(entry(3)); // after the write ran: a batch of its own
    await Promise.all([first, second]);
    expect(taken.map((b) => b.map((e) => e.metadata?.i))).toEqual([
      [1, 2],
      [1, 2],
    ]);
    runWrite();
    await third;
    expect(taken.slice(2).map((b) => b.map((e) => e.metadata?.i))).toEqual([[3], [3]]);
  });

  it('goes on with a new batch after a write that failed before it took its entries', async () => {
    let fail = true;
    const written: AuditEntryInput[][] = [];
    const repo: AuditRepository = {
      insertMany: async () => {},
      insertTaken: async (take) => {
        if (fail) throw new Error('the database writer is closed'); // rejected without taking
        written.push([...take()]);
      },
      list: async () => [],
    };
    const log = new AuditLog(repo, clock);
    const entry = { orgId: 'o', actorType: 'system' as const, actorId: null, action: 'auth.lockout' as const };
    await expect(log.record(entry)).rejects.toThrow('closed');
    fail = false;
    await log.record(entry);
    expect(written).toHaveLength(1);
  });
});
