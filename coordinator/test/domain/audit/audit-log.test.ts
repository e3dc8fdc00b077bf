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
});
