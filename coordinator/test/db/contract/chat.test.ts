import { beforeEach, describe, expect, it } from 'vitest';
import type { ChatIntegration } from '../../../src/domain/model/chat-integrations.js';
import type { NewOutboxMessage } from '../../../src/domain/model/chat-outbox.js';
import { newId } from '../../../src/util/ids.js';
import { DamagedColumnError } from '../../../src/util/json.js';
import { triggerRow } from '../fixture.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { insertJob, orgWithAgent } from './fixture.js';

const T0 = Date.parse('2026-01-02T03:00:00.000Z');
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const LEASE = 60_000;
const databases = databasesOfThisFile();

/**
 * The outbox as two coordinators sharing one database see it. A claim is exclusive until its
 * lease ends; a late worker's result is refused.
 */
describe.each(DATABASES)('chat outbox repository (%s)', (kind) => {
  const t = databases.use(kind);
  let orgId: string;
  let agentId: string;

  beforeEach(async () => {
    ({ orgId, agentId } = await orgWithAgent(t.repos, iso(0)));
  });

  const message = (i: number, fields: Partial<NewOutboxMessage> = {}): NewOutboxMessage => ({
    orgId,
    dedupeKey: `m${i}`,
    jobId: null,
    provider: 'slack',
    target: { type: 'channel', teamId: 'T1', channelId: 'C1' },
    payload: { kind: 'chat_answer', text: `answer ${i}` },
    createdAt: iso(i),
    ...fields,
  });
  /** The messages a claim took (none of these is damaged). */
  const claim =
    (repos: typeof t.repos) =>
    async (...args: Parameters<typeof repos.chatOutbox.claimDue>) => {
      const { claimed, damaged } = await repos.chatOutbox.claimDue(...args);
      expect(damaged).toEqual([]);
      return claimed;
    };
  const enqueue = async (n: number) => {
    for (let i = 0; i < n; i++) await t.repos.chatOutbox.enqueue(message(i));
  };

  it('gives each due message to one worker, in due order, counting the attempt', async () => {
    await enqueue(3);
    await t.repos.chatOutbox.enqueue(message(0, { payload: { kind: 'chat_answer', text: 'a duplicate' } }));
    const now = iso(10);
    const [first, second] = await Promise.all([
      claim(t.repos)(now, iso(10 + LEASE), 2),
      claim(t.other)(now, iso(10 + LEASE), 2),
    ]);
    const claimed = [...first, ...second].map((m) => m.dedupeKey);
    expect(claimed.sort()).toEqual(['m0', 'm1', 'm2']);
    expect(first.length + second.length).toBe(3);
    expect([...first, ...second].find((m) => m.dedupeKey === 'm0')).toMatchObject({
      status: 'sending',
      attempts: 1,
      nextAttemptAt: iso(10 + LEASE),
      payload: { kind: 'chat_answer', text: 'answer 0' },
      target: { type: 'channel', teamId: 'T1', channelId: 'C1' },
    });
    expect(await claim(t.repos)(iso(20), iso(20 + LEASE), 10)).toEqual([]);
  });

  it('claims the due messages in due order', async () => {
    await enqueue(3);
    expect((await claim(t.repos)(iso(10), iso(LEASE), 2)).map((m) => m.dedupeKey)).toEqual(['m0', 'm1']);
  });

  it('claims by due time, not by age: a retry comes after the messages due before it', async () => {
    await enqueue(3);
    const [first] = await claim(t.repos)(iso(0), iso(LEASE), 1);
    await t.repos.chatOutbox.retryLater(first!.id, first!.claimToken, 'rate limited', iso(5));
    const claimed = await claim(t.repos)(iso(10), iso(10 + LEASE), 3);
    expect(claimed.map((m) => [m.dedupeKey, m.attempts])).toEqual([
      ['m1', 1],
      ['m2', 1],
      ['m0', 2],
    ]);
  });

  it("lets another worker take a message whose lease ran out, and refuses the first worker's late result", async () => {
    await enqueue(1);
    const [stale] = await claim(t.repos)(iso(10), iso(10 + LEASE), 5);
    expect(await claim(t.other)(iso(10 + LEASE - 1), iso(10 + 2 * LEASE), 5)).toEqual([]);
    const [taken] = await claim(t.other)(iso(10 + LEASE), iso(10 + 2 * LEASE), 5);
    expect(taken).toMatchObject({ id: stale!.id, attempts: 2 });
    expect(await t.repos.chatOutbox.markSent(stale!.id, stale!.claimToken, iso(10 + LEASE + 5))).toBe(false);
    expect(await t.repos.chatOutbox.retryLater(stale!.id, stale!.claimToken, 'late', iso(0))).toBe(false);
    expect(await t.repos.chatOutbox.markFailed(stale!.id, stale!.claimToken, 'late', iso(0))).toBe(false);
    expect(await t.other.chatOutbox.markSent(taken!.id, taken!.claimToken, iso(10 + LEASE + 6))).toBe(true);
    expect(await claim(t.repos)(iso(10 * LEASE), iso(11 * LEASE), 5)).toEqual([]);
  });

  // Only a SQLite file can hold one: PostgreSQL's columns are of type json.
  it.skipIf(kind === 'postgres')(
    'gives up a message whose stored row does not parse (a damaged database), naming it, and claims the others',
    async () => {
      await enqueue(3);
      await t.exec(`UPDATE chat_outbox SET payload = '{"kind":' WHERE dedupe_key = 'm0'`);
      await t.exec(`UPDATE chat_outbox SET target = 'C1' WHERE dedupe_key = 'm2'`);
      const { claimed, damaged } = await t.repos.chatOutbox.claimDue(iso(10), iso(10 + LEASE), 5);
      expect(claimed.map((m) => m.dedupeKey)).toEqual(['m1']);
      await t.repos.chatOutbox.markSent(claimed[0]!.id, claimed[0]!.claimToken, iso(11));
      const [m0, , m2] = await t.rows<{ id: number; status: string; last_error: string; failed_at: string }>(
        'SELECT id, status, last_error, failed_at FROM chat_outbox ORDER BY id',
      );
      expect(damaged).toEqual([
        { id: String(m0!.id), column: 'chat_outbox.payload', error: expect.any(DamagedColumnError) },
        { id: String(m2!.id), column: 'chat_outbox.target', error: expect.any(DamagedColumnError) },
      ]);
      // Given up: never claimed again, its reason kept.
      expect([m0, m2]).toEqual([
        {
          id: m0!.id,
          status: 'failed',
          last_error: 'its stored payload does not parse (a damaged database): it cannot be sent',
          failed_at: iso(10),
        },
        {
          id: m2!.id,
          status: 'failed',
          last_error: 'its stored target does not parse (a damaged database): it cannot be sent',
          failed_at: iso(10),
        },
      ]);
      expect(await claim(t.repos)(iso(10 + LEASE), iso(10 + 2 * LEASE), 5)).toEqual([]);
    },
  );

  it('retries a message later, gives one up, and prunes the old ones of no job', async () => {
    await enqueue(2);
    const [a, b] = await claim(t.repos)(iso(10), iso(10 + LEASE), 5);
    expect(await t.repos.chatOutbox.retryLater(a!.id, a!.claimToken, 'rate limited', iso(500))).toBe(true);
    expect(await t.repos.chatOutbox.markFailed(b!.id, b!.claimToken, 'channel_not_found', iso(20))).toBe(true);
    expect(await claim(t.repos)(iso(499), iso(LEASE), 5)).toEqual([]);
    const [again] = await claim(t.repos)(iso(500), iso(500 + LEASE), 5);
    expect(again).toMatchObject({ id: a!.id, attempts: 2, lastError: 'rate limited' });
    await t.repos.chatOutbox.markSent(again!.id, again!.claimToken, iso(600));
    expect(await t.repos.chatOutbox.pruneJobless(iso(21))).toBe(1);
    expect(await t.repos.chatOutbox.pruneJobless(iso(601))).toBe(1);
  });

  it('writes one message per job however often its end is reported', async () => {
    const triggerId = newId();
    await t.repos.triggers.insert(
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
    const job = await insertJob(t, { orgId, agentId }, { triggerId, createdAt: iso(0), timeoutMs: null });
    const report = { status: 'success' as const, exitCode: 0, errorMessage: null, output: {} };
    const outcomes = await Promise.all([
      t.repos.jobs.finish(agentId, job.id, report, iso(6)),
      t.other.jobs.finish(agentId, job.id, report, iso(7)),
    ]);
    expect(outcomes.map((o) => o.outcome).sort()).toEqual(['applied', 'unchanged']);
    const { messages, damaged } = await t.repos.chatOutbox.listByJob(job.id);
    expect(damaged).toEqual([]);
    expect(messages.map((m) => [m.dedupeKey, m.status, m.provider])).toEqual([
      [`job:${job.id}:outcome`, 'pending', 'slack'],
    ]);
    expect(messages[0]!.payload).toMatchObject({ kind: 'job_outcome', jobId: job.id, status: 'success', number: 1 });
    // A job of a trigger that posts nothing writes none.
    const quiet = await insertJob(t, { orgId, agentId }, { createdAt: iso(0), timeoutMs: null });
    await t.repos.jobs.finish(agentId, quiet.id, report, iso(8));
    expect(await t.repos.chatOutbox.listByJob(quiet.id)).toEqual({ messages: [], damaged: [] });

    // One whose row does not parse (a damaged SQLite file: PostgreSQL's columns are of type json)
    // is left out of the job's messages and named.
    if (kind === 'postgres') return;
    await t.exec(`UPDATE chat_outbox SET payload = '{"kind":' WHERE dedupe_key = 'job:${job.id}:outcome'`);
    expect(await t.repos.chatOutbox.listByJob(job.id)).toEqual({
      messages: [],
      damaged: [{ id: String(messages[0]!.id), column: 'chat_outbox.payload', error: expect.any(DamagedColumnError) }],
    });
  });
});

describe.each(DATABASES)('chat integrations (%s)', (kind) => {
  const t = databases.use(kind);
  let orgId: string;
  let ownerId: string;
  let otherOrgId: string;
  let otherOwnerId: string;

  beforeEach(async () => {
    ({ orgId, userId: ownerId } = await orgWithAgent(t.repos, iso(0)));
    ({ orgId: otherOrgId, userId: otherOwnerId } = await orgWithAgent(t.repos, iso(0)));
  });

  const integration = (fields: Partial<ChatIntegration> = {}): ChatIntegration => ({
    id: newId(),
    orgId,
    provider: 'slack',
    teamId: 'T1',
    teamName: 'Acme',
    botUserId: 'U0BOT',
    sealedAccessToken: 'sealed-1',
    scopes: 'commands,chat:write',
    connectedByUserId: ownerId,
    createdAt: iso(0),
    ...fields,
  });

  it("connects a workspace to one organization: a reconnect refreshes it, another organization's is refused", async () => {
    const first = integration();
    expect(await t.repos.chatIntegrations.connect(first)).toEqual({ outcome: 'connected', integration: first });
    const again = integration({ teamName: 'Acme Inc', sealedAccessToken: 'sealed-2', createdAt: iso(5) });
    expect(await t.repos.chatIntegrations.connect(again)).toEqual({
      outcome: 'connected',
      integration: { ...again, id: first.id, createdAt: iso(0) },
    });
    expect(
      await t.other.chatIntegrations.connect(integration({ orgId: otherOrgId, connectedByUserId: otherOwnerId })),
    ).toEqual({ outcome: 'taken' });
    expect(await t.repos.chatIntegrations.listByOrg(orgId)).toEqual([{ ...again, id: first.id, createdAt: iso(0) }]);
    expect((await t.repos.chatIntegrations.findByTeam('slack', 'T1'))?.teamName).toBe('Acme Inc');
    expect(await t.repos.chatIntegrations.findByTeam('discord', 'T1')).toBeNull();
    expect(await t.repos.chatIntegrations.findInOrg(otherOrgId, first.id)).toBeNull();
    expect(await t.repos.chatIntegrations.delete(otherOrgId, first.id)).toBe(false);
    expect(await t.repos.chatIntegrations.delete(orgId, first.id)).toBe(true);
    expect(await t.repos.chatIntegrations.listByOrg(orgId)).toEqual([]);
  });

  it('connects nothing for someone who is not, or no longer, an owner of the organization', async () => {
    const other = newId();
    await t.repos.users.insert({ id: other, email: `${other}@example.test`, passwordHash: 'x', createdAt: iso(0) });
    await t.repos.orgs.addMember(orgId, other, 'operator', iso(0));
    expect(await t.repos.chatIntegrations.connect(integration({ connectedByUserId: other }))).toEqual({
      outcome: 'not_owner',
    });
    // An owner of another organization is none of this one's.
    expect(await t.repos.chatIntegrations.connect(integration({ connectedByUserId: otherOwnerId }))).toEqual({
      outcome: 'not_owner',
    });
    expect(await t.repos.chatIntegrations.listByOrg(orgId)).toEqual([]);

    // Removed (on another coordinator): their next connection is refused too.
    await t.repos.orgs.setRole(orgId, other, 'owner', iso(0));
    await t.other.orgs.removeMember(orgId, other, iso(1));
    expect(await t.repos.chatIntegrations.connect(integration({ connectedByUserId: other }))).toEqual({
      outcome: 'not_owner',
    });
    expect(await t.repos.chatIntegrations.listByOrg(orgId)).toEqual([]);
  });

  it('consumes an OAuth state once, before it expires, and forgets expired ones', async () => {
    const state = {
      stateHash: 'h1',
      orgId,
      userId: 'u1',
      provider: 'slack' as const,
      browserHash: 'b1',
      createdAt: iso(0),
      expiresAt: iso(600_000),
    };
    await t.repos.chatIntegrations.addState(state);
    expect(await t.repos.chatIntegrations.consumeState('h1', 'discord', iso(1))).toBeNull();
    const consumed = await Promise.all([
      t.repos.chatIntegrations.consumeState('h1', 'slack', iso(1)),
      t.other.chatIntegrations.consumeState('h1', 'slack', iso(1)),
    ]);
    expect(consumed.filter((c) => c !== null)).toEqual([state]);
    await t.repos.chatIntegrations.addState({ ...state, stateHash: 'h2' });
    expect(await t.repos.chatIntegrations.consumeState('h2', 'slack', iso(600_000))).toBeNull();
    await t.repos.chatIntegrations.addState({
      ...state,
      stateHash: 'h3',
      createdAt: iso(700_000),
      expiresAt: iso(800_000),
    });
    expect(await t.rows("SELECT state_hash FROM chat_oauth_states WHERE state_hash = 'h2'")).toEqual([]);
  });

  it('records a signed request once for every coordinator until it expires, and forgets expired ones', async () => {
    const seen = await Promise.all([
      t.repos.chatRequests.firstSeen('slack', 'r1', iso(600_000), iso(0)),
      t.other.chatRequests.firstSeen('slack', 'r1', iso(600_000), iso(0)),
      t.repos.chatRequests.firstSeen('slack', 'r1', iso(600_000), iso(1)),
    ]);
    expect(seen.filter(Boolean)).toHaveLength(1);
    // The same hash from the other provider is another request.
    expect(await t.other.chatRequests.firstSeen('discord', 'r1', iso(600_000), iso(2))).toBe(true);
    expect(await t.repos.chatRequests.firstSeen('slack', 'r1', iso(600_000), iso(599_999))).toBe(false);
    // Expired: forgotten, and a request of that hash is new again.
    expect(await t.repos.chatRequests.firstSeen('slack', 'r2', iso(1_200_000), iso(600_000))).toBe(true);
    expect(await t.rows("SELECT request_hash FROM chat_requests_seen WHERE provider = 'slack'")).toEqual([
      { request_hash: 'r2' },
    ]);
    expect(await t.other.chatRequests.firstSeen('slack', 'r1', iso(1_200_000), iso(600_001))).toBe(true);
  });
});
