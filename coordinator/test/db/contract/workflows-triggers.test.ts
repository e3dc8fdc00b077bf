import { beforeEach, describe, expect, it } from 'vitest';
import type { Trigger } from '../../../src/domain/model/triggers.js';
import { newId } from '../../../src/util/ids.js';
import { triggerRow } from '../fixture.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { enroll, orgWithAgent } from './fixture.js';

const T0 = Date.parse('2026-01-02T03:00:00.000Z');
const iso = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();
const databases = databasesOfThisFile();

describe.each(DATABASES)('workflows, triggers and cron occurrences (%s)', (kind) => {
  const t = databases.use(kind);
  let orgId: string;
  let agentId: string;

  beforeEach(async () => {
    ({ orgId, agentId } = await orgWithAgent(t.repos, iso(0)));
  });

  it("replaces an agent's workflows: new ones added, known ones kept with their id and limits, missing ones removed", async () => {
    const steps = [{ run: 'deploy.sh', args: ['--fast'] }];
    const first = await t.repos.workflows.replaceForAgent(
      orgId,
      agentId,
      [
        {
          name: 'deploy',
          description: 'Deploys',
          version: '1',
          paramsSchema: [{ name: 'env', type: 'string' }],
          steps,
        },
        { name: 'backup', secretsKeys: ['S3_KEY'], timeout: 60_000, cancelGrace: 5_000, steps },
      ],
      iso(0),
    );
    expect(first.map((w) => w.name)).toEqual(['backup', 'deploy']);
    expect(first[0]).toMatchObject({
      orgId,
      agentId,
      secretsKeys: ['S3_KEY'],
      timeoutMs: 60_000,
      cancelGraceMs: 5_000,
      paramsSchema: null,
      steps,
      removedAt: null,
      createdAt: iso(0),
    });
    const deploy = first[1]!;
    const limited = await t.repos.workflows.setRateLimits(
      orgId,
      deploy.id,
      { perMinute: 2, perHour: null, perDay: 9 },
      iso(1),
    );
    expect(limited?.rateLimit).toEqual({ perMinute: 2, perHour: null, perDay: 9 });
    expect(await t.repos.workflows.setRateLimits(newId(), deploy.id, limited!.rateLimit, iso(1))).toBeNull();

    const second = await t.repos.workflows.replaceForAgent(
      orgId,
      agentId,
      [{ name: 'deploy', version: '2', steps }],
      iso(2),
    );
    expect(second).toEqual([
      {
        ...deploy,
        version: '2',
        description: null,
        paramsSchema: null,
        rateLimit: limited!.rateLimit,
        updatedAt: iso(2),
      },
    ]);
    expect(await t.repos.workflows.findActiveByAgentAndName(agentId, 'backup')).toBeNull();
    const backup = await t.repos.workflows.findInOrg(orgId, first[0]!.id);
    expect(backup?.removedAt).toBe(iso(2));
    // A removed workflow that comes back keeps its id.
    const third = await t.repos.workflows.replaceForAgent(orgId, agentId, [{ name: 'backup', steps }], iso(3));
    expect(third.map((w) => [w.id, w.removedAt])).toEqual([[first[0]!.id, null]]);

    const otherAgent = await enroll(t.repos, orgId, iso(0));
    await t.repos.workflows.replaceForAgent(orgId, otherAgent, [{ name: 'backup', steps }], iso(4));
    expect((await t.repos.workflows.listActiveByAgents([agentId, otherAgent])).map((w) => w.agentId)).toEqual(
      [agentId, otherAgent].sort(),
    );
    expect(await t.repos.workflows.listActiveByAgents([])).toEqual([]);
    expect((await t.repos.workflows.listByOrg(orgId)).map((w) => w.name)).toEqual(['backup', 'backup']);
    // One name on many agents: the active ones of those that have it, none of another name.
    await t.repos.workflows.replaceForAgent(orgId, otherAgent, [{ name: 'deploy', steps }], iso(5));
    const named = await t.repos.workflows.listActiveNamedByAgents('backup', [agentId, otherAgent, newId()]);
    expect(named.map((w) => [w.agentId, w.name]).sort()).toEqual([[agentId, 'backup']]);
    expect(await t.repos.workflows.listActiveNamedByAgents('deploy', [otherAgent])).toMatchObject([
      { agentId: otherAgent, name: 'deploy', removedAt: null },
    ]);
    expect(await t.repos.workflows.listActiveNamedByAgents('backup', [])).toEqual([]);
  });

  it('lists workflows by the bytes of their names, as SQLite sorts them, whatever the collation of the PostgreSQL database', async () => {
    const steps = [{ run: 'true' }];
    const names = ['Zeta', 'alpha', 'a-c', 'ab', 'a_d', 'B2', 'b10'];
    const other = await enroll(t.repos, orgId, iso(0));
    await t.repos.workflows.replaceForAgent(
      orgId,
      other,
      names.map((name) => ({ name, steps })),
      iso(0),
    );
    const reported = await t.repos.workflows.replaceForAgent(
      orgId,
      agentId,
      names.map((name) => ({ name, steps })),
      iso(0),
    );
    // Upper case before lower case, `-` before letters and `_` after upper case ones.
    const byBytes = ['B2', 'Zeta', 'a-c', 'a_d', 'ab', 'alpha', 'b10'];
    expect(reported.map((w) => w.name)).toEqual(byBytes);
    const [first, second] = [agentId, other].sort();
    const both = byBytes.flatMap((name) => [`${name} ${first}`, `${name} ${second}`]);
    expect((await t.repos.workflows.listByOrg(orgId)).map((w) => `${w.name} ${w.agentId}`)).toEqual(both);
    expect((await t.repos.workflows.listActiveByAgents([agentId, other])).map((w) => `${w.name} ${w.agentId}`)).toEqual(
      both,
    );
  });

  it('stores every field of a trigger, updates its configuration and soft-deletes it', async () => {
    const cron = triggerRow({
      id: newId(),
      orgId,
      agentId,
      name: 'nightly',
      type: 'cron',
      scopeType: 'workflow',
      workflowName: 'backup',
      responseMode: 'sync',
      allowedRefs: ['main', 'v*'],
      allowDebug: true,
      notifyProvider: 'slack',
      notifyTeamId: 'T1',
      notifyChannelId: 'C1',
      notifyOn: 'failure',
      cronExpression: '0 3 * * *',
      cronTimezone: 'Europe/Paris',
      cronEnabled: true,
      cronMissedPolicy: 'run_once',
      cronOverlapPolicy: 'queue',
      params: { env: 'prod', retries: 2 },
      ref: 'main',
      cronSince: iso(0),
      createdAt: iso(0),
      updatedAt: iso(0),
    });
    const chat = triggerRow({
      id: newId(),
      orgId,
      agentId,
      name: 'chat',
      type: 'slack',
      chatTeamId: 'T1',
      chatChannelId: 'C9',
      chatKeyword: 'deploy',
      chatAllowedUserIds: ['U1', 'U2'],
      createdAt: iso(0),
      updatedAt: iso(0),
    });
    const webhook = triggerRow({ id: newId(), orgId, agentId, createdAt: iso(0), updatedAt: iso(0) });
    for (const x of [cron, chat, webhook]) await t.repos.triggers.insert(x);
    expect(await t.repos.triggers.findById(cron.id)).toEqual(cron);
    expect(await t.repos.triggers.findInOrg(orgId, chat.id)).toEqual(chat);
    expect((await t.repos.triggers.listByOrg(orgId)).map((x) => x.id)).toEqual([cron.id, chat.id, webhook.id]);
    expect((await t.repos.triggers.listByIds(orgId, [webhook.id, cron.id])).map((x) => x.id)).toEqual([
      cron.id,
      webhook.id,
    ]);
    expect(await t.repos.triggers.listEnabledCron()).toEqual({ triggers: [cron], damaged: [] });
    expect(await t.repos.triggers.listInChatChannel(orgId, 'slack', 'T1', 'C9')).toEqual([chat]);
    expect(await t.repos.triggers.listInChatChannel(orgId, 'discord', 'T1', 'C9')).toEqual([]);

    const paused = { ...cron, name: 'paused', cronEnabled: false, params: null, allowedRefs: null, updatedAt: iso(5) };
    await t.repos.triggers.update({ ...paused, createdAt: iso(99), createdBy: 'someone else' });
    expect(await t.repos.triggers.findById(cron.id)).toEqual(paused);
    expect(await t.repos.triggers.listEnabledCron()).toEqual({ triggers: [], damaged: [] });
    expect(await t.repos.triggers.softDelete(orgId, chat.id, iso(6))).toBe(true);
    expect(await t.repos.triggers.softDelete(orgId, chat.id, iso(7))).toBe(false);
    expect(await t.repos.triggers.findById(chat.id)).toBeNull();
  });

  it('writes a change made from a version only while the trigger is still that version', async () => {
    const stored = triggerRow({ id: newId(), orgId, agentId, createdAt: iso(0), updatedAt: iso(0) });
    await t.repos.triggers.insert(stored);
    const limits = { triggers: 10, enabledCron: 10 };
    // Two changes made from the same version: the first is written, the second is not.
    const renamed = { ...stored, name: 'first', updatedAt: iso(1) };
    expect(await t.repos.triggers.update(renamed, limits, iso(0))).toBeNull();
    expect(await t.repos.triggers.update({ ...stored, allowDebug: true, updatedAt: iso(2) }, undefined, iso(0))).toBe(
      'changed',
    );
    expect(await t.repos.triggers.findById(stored.id)).toEqual(renamed);
    // Made from the version stored, it is written, with limits or without.
    expect(await t.repos.triggers.update({ ...renamed, allowDebug: true, updatedAt: iso(2) }, undefined, iso(1))).toBe(
      null,
    );
    expect((await t.repos.triggers.findById(stored.id))?.allowDebug).toBe(true);
    // A trigger deleted since the change was made from it is `changed` too, and stays deleted.
    expect(await t.repos.triggers.softDelete(orgId, stored.id, iso(3))).toBe(true);
    expect(await t.repos.triggers.update({ ...renamed, updatedAt: iso(4) }, limits, iso(2))).toBe('changed');
    expect(await t.repos.triggers.findById(stored.id)).toBeNull();
  });

  describe('trigger limits', () => {
    const trigger = (fields: Partial<Trigger> = {}) => triggerRow({ id: newId(), orgId, agentId, ...fields });
    const cron = (cronEnabled: boolean) =>
      trigger({
        type: 'cron',
        scopeType: 'workflow',
        workflowName: 'backup',
        cronExpression: '0 3 * * *',
        cronTimezone: 'UTC',
        cronEnabled,
      });

    it('refuses a write past a limit and writes nothing; deleted triggers and disabled cron ones do not count', async () => {
      const limits = { triggers: 3, enabledCron: 1 };
      const first = cron(true);
      expect(await t.repos.triggers.insert(first, limits)).toBeNull();
      const second = cron(true);
      expect(await t.repos.triggers.insert(second, limits)).toBe('enabledCron');
      expect(await t.repos.triggers.findById(second.id)).toBeNull();
      const paused = cron(false);
      expect(await t.repos.triggers.insert(paused, limits)).toBeNull();
      // Enabling it takes a place: refused while the first holds the only one.
      expect(await t.repos.triggers.update({ ...paused, cronEnabled: true }, limits)).toBe('enabledCron');
      expect((await t.repos.triggers.findById(paused.id))?.cronEnabled).toBe(false);
      expect(await t.repos.triggers.update({ ...first, cronEnabled: false }, limits)).toBeNull();
      expect(await t.repos.triggers.update({ ...paused, cronEnabled: true }, limits)).toBeNull();
      // An enabled cron trigger changed again keeps its place.
      expect(await t.repos.triggers.update({ ...paused, cronEnabled: true, name: 'renamed' }, limits)).toBeNull();

      const hook = trigger();
      expect(await t.repos.triggers.insert(hook, limits)).toBeNull();
      expect(await t.repos.triggers.insert(trigger(), limits)).toBe('triggers');
      // A full organization still changes its triggers; a deleted one frees its place.
      expect(await t.repos.triggers.update({ ...hook, name: 'renamed' }, limits)).toBeNull();
      expect(await t.repos.triggers.softDelete(orgId, hook.id, iso(1))).toBe(true);
      expect(await t.repos.triggers.insert(trigger(), limits)).toBeNull();
      // Another organization has places of its own.
      const other = await orgWithAgent(t.repos, iso(0));
      const theirs = triggerRow({ id: newId(), orgId: other.orgId, agentId: other.agentId });
      expect(await t.repos.triggers.insert(theirs, limits)).toBeNull();
      expect((await t.repos.triggers.listByOrg(orgId)).length).toBe(3);
    });

    it('lets one of several writes at once take the last place, whichever coordinator makes them', async () => {
      const limits = { triggers: 1, enabledCron: 1 };
      const sides = [t.repos, t.other, t.repos, t.other];
      const inserted = await Promise.all(sides.map((repos) => repos.triggers.insert(trigger(), limits)));
      expect(inserted.filter((r) => r === null)).toHaveLength(1);
      expect(inserted.filter((r) => r === 'triggers')).toHaveLength(3);
      expect(await t.repos.triggers.listByOrg(orgId)).toHaveLength(1);

      // Enabling paused cron triggers at once: one of them gets the only place.
      const roomy = { triggers: 100, enabledCron: 1 };
      const paused = [cron(false), cron(false), cron(false), cron(false)];
      for (const p of paused) expect(await t.repos.triggers.insert(p, roomy)).toBeNull();
      const enabled = await Promise.all(
        paused.map((p, i) => sides[i]!.triggers.update({ ...p, cronEnabled: true }, roomy)),
      );
      expect(enabled.filter((r) => r === null)).toHaveLength(1);
      expect((await t.repos.triggers.listEnabledCron()).triggers).toHaveLength(1);
    });
  });

  it('records skipped occurrences once, whoever records them', async () => {
    const skipped = (at: number, fields: object = {}) => ({
      triggerId: 'trigger-1',
      orgId,
      scheduledAt: iso(at),
      reason: 'missed' as const,
      firstScheduledAt: null,
      recordedAt: iso(100),
      ...fields,
    });
    const counts = await Promise.all([
      t.repos.cronOccurrences.recordSkipped([skipped(1), skipped(2, { firstScheduledAt: iso(0) })]),
      t.other.cronOccurrences.recordSkipped([skipped(2), skipped(3, { reason: 'disabled' })]),
    ]);
    expect(counts[0] + counts[1]).toBe(3);
    expect(await t.repos.cronOccurrences.recordSkipped([])).toBe(0);
    const listed = await t.repos.cronOccurrences.list('trigger-1', { limit: 10 });
    expect(listed.map((o) => [o.scheduledAt, o.outcome, o.jobId, o.jobStatus])).toEqual([
      [iso(3), 'skipped', null, null],
      [iso(2), 'skipped', null, null],
      [iso(1), 'skipped', null, null],
    ]);
    expect(listed[2]).toMatchObject({ reason: 'missed', firstScheduledAt: null, recordedAt: iso(100) });
    expect(await t.repos.cronOccurrences.latestScheduledAt('trigger-1')).toBe(iso(3));
    expect(await t.repos.cronOccurrences.latestScheduledAt('other')).toBeNull();
  });
});
