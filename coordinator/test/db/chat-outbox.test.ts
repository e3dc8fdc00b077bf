import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createChatOutboxRepository, createOutboxWrites } from '../../src/db/repositories/chat-outbox.js';
import { planJobMessages } from '../../src/domain/chat/notifications/plan.js';
import type { ChatOutboxRepository } from '../../src/domain/model/chat-outbox.js';
import { GroupCommitExecutor } from '../../src/db/writer/executor.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import { newId } from '../../src/util/ids.js';
import { enrollAgent, insertJobRow, triggerRow } from './fixture.js';

const T0 = Date.parse('2026-01-02T03:00:00.000Z');
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const LEASE = 60_000;

/**
 * The outbox as two coordinators sharing one database file see it: two connections, each with
 * its own repository. A claim is exclusive until its lease ends; a late worker's result is refused.
 */
describe('chat outbox repository', () => {
  let dir: string;
  let a: Db;
  let b: Db;
  let outboxA: ChatOutboxRepository;
  let outboxB: ChatOutboxRepository;
  let orgId: string;

  const enqueue = (n: number) => {
    const insert = a.prepare(
      `INSERT INTO chat_outbox (org_id, dedupe_key, provider, target, payload, status, next_attempt_at, created_at)
       VALUES (?, ?, 'slack', '{"type":"channel","teamId":"T1","channelId":"C1"}', '{"kind":"job_outcome"}', 'pending', ?, ?)`,
    );
    for (let i = 0; i < n; i++) insert.run(orgId, `m${i}`, iso(i), iso(i));
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-outbox-'));
    const file = path.join(dir, 'drover.db');
    a = openDatabase(file);
    migrate(a);
    b = openDatabase(file);
    orgId = newId();
    a.prepare("INSERT INTO orgs (id, name, created_at) VALUES (?, 'acme', ?)").run(orgId, iso(0));
    outboxA = createChatOutboxRepository(a);
    outboxB = createChatOutboxRepository(b);
  });
  afterEach(() => {
    a.close();
    b.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('gives each due message to one worker, in due order, counting the attempt', async () => {
    enqueue(3);
    const now = iso(10);
    const [first, second] = await Promise.all([
      outboxA.claimDue(now, iso(10 + LEASE), 2),
      outboxB.claimDue(now, iso(10 + LEASE), 2),
    ]);
    expect(first.map((m) => m.dedupeKey)).toEqual(['m0', 'm1']);
    expect(second.map((m) => m.dedupeKey)).toEqual(['m2']);
    expect(first[0]).toMatchObject({ status: 'sending', attempts: 1, nextAttemptAt: iso(10 + LEASE) });
    expect(await outboxA.claimDue(iso(20), iso(20 + LEASE), 10)).toEqual([]);
  });

  it("lets another worker take a message whose lease ran out, and refuses the first worker's late result", async () => {
    enqueue(1);
    const [stale] = await outboxA.claimDue(iso(10), iso(10 + LEASE), 5);
    expect(await outboxB.claimDue(iso(10 + LEASE - 1), iso(10 + 2 * LEASE), 5)).toEqual([]);
    const [taken] = await outboxB.claimDue(iso(10 + LEASE), iso(10 + 2 * LEASE), 5);
    expect(taken).toMatchObject({ id: stale!.id, attempts: 2 });
    expect(await outboxA.markSent(stale!.id, stale!.claimToken, iso(10 + LEASE + 5))).toBe(false);
    expect(await outboxA.retryLater(stale!.id, stale!.claimToken, 'late', iso(0))).toBe(false);
    expect(await outboxB.markSent(taken!.id, taken!.claimToken, iso(10 + LEASE + 6))).toBe(true);
    expect(await outboxA.claimDue(iso(10 * LEASE), iso(11 * LEASE), 5)).toEqual([]);
  });

  it('writes one message per job however often its end is recorded', async () => {
    const repos = createSqliteRepositories(a, new GroupCommitExecutor(a));
    const agentId = await enrollAgent(repos, orgId, iso(0));
    const triggerId = newId();
    await repos.triggers.insert(
      triggerRow({
        id: triggerId,
        orgId,
        agentId,
        notifyProvider: 'slack',
        notifyTeamId: 'T1',
        notifyChannelId: 'C1',
        notifyOn: 'always',
      }),
    );
    const { id: jobId } = insertJobRow(
      a,
      { orgId, agentId },
      { triggerId, createdAt: iso(0), timeoutMs: null, status: 'rejected' },
    );
    const writes = createOutboxWrites(a, planJobMessages);
    writes.jobsEnded([jobId], iso(6));
    writes.jobsEnded([jobId], iso(7));
    const rows = a.prepare('SELECT dedupe_key, status, created_at FROM chat_outbox').all();
    expect(rows).toEqual([{ dedupe_key: `job:${jobId}:outcome`, status: 'pending', created_at: iso(6) }]);
  });
});
