import { beforeEach, describe, expect, it } from 'vitest';
import { newId } from '../../../src/util/ids.js';
import { triggerRow } from '../fixture.js';
import { DATABASES, databasesOfThisFile } from './databases.js';
import { enroll } from './fixture.js';

const AT = '2026-01-02T03:04:05.000Z';
const AT_LATER = '2026-01-02T04:00:00.000Z';
const databases = databasesOfThisFile();

describe.each(DATABASES)('change counter (%s)', (kind) => {
  const t = databases.use(kind);
  let orgId: string;
  let userId: string;

  beforeEach(async () => {
    userId = newId();
    await t.repos.users.insert({ id: userId, email: 'u@example.test', passwordHash: 'x', createdAt: AT });
    orgId = newId();
    await t.repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, userId);
  });

  /** Runs `write` and tells whether the generation moved. */
  const moves = async (write: () => unknown) => {
    const before = await t.repos.changeCounter.generation();
    await write();
    return (await t.repos.changeCounter.generation()) !== before;
  };

  const enrollOne = () => enroll(t.repos, orgId, AT);

  it('moves on every insert, update and delete of agents, workflows, triggers and api tokens', async () => {
    let agentId = '';
    expect(await moves(async () => (agentId = await enrollOne()))).toBe(true);
    expect(await moves(() => t.repos.agents.edit(orgId, agentId, 0, { name: 'b' }))).toBe(true);
    const set = [
      {
        name: 'w',
        description: 'd',
        timeout: 5_000,
        paramsSchema: [{ name: 'p', type: 'string' as const }],
        steps: [{ run: 'x' }],
      },
      { name: 'v', steps: [{ run: 'y' }], secretsKeys: ['K'] },
    ];
    expect(await moves(() => t.repos.workflows.replaceForAgent(orgId, agentId, set, AT))).toBe(true);
    // The same set again (every agent reports it at every connect): nothing written, nothing moved.
    const [before] = await t.repos.workflows.listActiveByAgents([agentId]);
    expect(await moves(() => t.repos.workflows.replaceForAgent(orgId, agentId, [...set].reverse(), AT_LATER))).toBe(
      false,
    );
    const [after] = await t.repos.workflows.listActiveByAgents([agentId]);
    expect(after).toEqual(before);
    const changed = [{ ...set[0]!, steps: [{ run: 'z' }] }, set[1]!];
    expect(await moves(() => t.repos.workflows.replaceForAgent(orgId, agentId, changed, AT_LATER))).toBe(true);
    expect(await moves(() => t.repos.workflows.replaceForAgent(orgId, agentId, [set[1]!], AT_LATER))).toBe(true);
    expect(await moves(() => t.repos.workflows.replaceForAgent(orgId, agentId, [], AT))).toBe(true);
    const tokenId = newId();
    expect(
      await moves(() =>
        t.repos.apiTokens.insert(
          {
            id: tokenId,
            orgId,
            userId,
            name: 't',
            hint: 'h',
            scopes: [],
            rateLimit: { perMinute: null, perHour: null, perDay: null },
            expiresAt: null,
            revokedAt: null,
            createdAt: AT,
          },
          newId(),
        ),
      ),
    ).toBe(true);
    expect(await moves(() => t.repos.apiTokens.revoke(orgId, tokenId, AT))).toBe(true);
    expect(await moves(() => t.exec('DELETE FROM api_tokens'))).toBe(true);
    expect(await moves(() => t.repos.agents.revoke(orgId, agentId, AT))).toBe(true);
    expect(await moves(() => t.exec('DELETE FROM workflows'))).toBe(true);
    expect(await moves(() => t.exec('DELETE FROM agents'))).toBe(true);
  });

  it('moves when a trigger is written', async () => {
    const agentId = await enrollOne();
    const id = newId();
    const trigger = triggerRow({ id, orgId, agentId, createdAt: AT, updatedAt: AT });
    expect(await moves(() => t.repos.triggers.insert(trigger))).toBe(true);
    expect(await moves(() => t.repos.triggers.update({ ...trigger, name: 'u' }))).toBe(true);
    expect(await moves(() => t.repos.triggers.softDelete(orgId, id, AT))).toBe(true);
  });

  it('stays put when other tables are written', async () => {
    expect(
      await moves(() =>
        t.repos.audit.insertMany([{ orgId, actorType: 'system', actorId: null, action: 'org.create', createdAt: AT }]),
      ),
    ).toBe(false);
    expect(
      await moves(() =>
        t.repos.storageBindings.insert({
          id: newId(),
          orgId,
          name: 'other',
          backend: 'local',
          config: {},
          isDefault: false,
          createdAt: AT,
        }),
      ),
    ).toBe(false);
  });

  it('moves when a membership changes (a token is only valid while its issuer is a member)', async () => {
    expect(await moves(() => t.repos.orgs.create({ id: newId(), name: 'other', createdAt: AT }, userId))).toBe(true);
  });

  it('moves the OTA counter, and only it, when an application is written', async () => {
    const before = await t.repos.changeCounter.otaGeneration();
    await t.exec('UPDATE applications SET slug = slug WHERE 1 = 0');
    const moves = await t.repos.changeCounter.generation();
    await t.exec(`INSERT INTO applications (id, org_id, slug, update_workflow_name, default_channel, created_at)
      VALUES ('app-1', '${orgId}', 'app', 'update', 'stable', '${AT}')`);
    expect(await t.repos.changeCounter.otaGeneration()).toBeGreaterThan(before);
    expect(await t.repos.changeCounter.generation()).toBe(moves);
  });
});
