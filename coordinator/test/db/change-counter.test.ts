import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import { newId } from '../../src/util/ids.js';
import { enrollAgent, triggerRow } from './fixture.js';

const AT = '2026-01-02T03:04:05.000Z';

describe('change counter', () => {
  let db: Db;
  let repos: Repositories;
  let orgId: string;
  let userId: string;

  beforeEach(async () => {
    db = openDatabase(':memory:');
    migrate(db);
    repos = createSqliteRepositories(db);
    userId = newId();
    await repos.users.insert({ id: userId, email: 'u@example.test', passwordHash: 'x', createdAt: AT });
    orgId = newId();
    await repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, userId);
  });
  afterEach(() => db.close());

  /** Runs `write` and tells whether the generation moved. */
  const moves = async (write: () => unknown) => {
    const before = await repos.changeCounter.generation();
    await write();
    return (await repos.changeCounter.generation()) !== before;
  };

  const enroll = () => enrollAgent(repos, orgId, AT);

  it('moves on every insert, update and delete of agents, workflows, triggers and api tokens', async () => {
    let agentId = '';
    expect(await moves(async () => (agentId = await enroll()))).toBe(true);
    expect(await moves(() => repos.agents.rename(orgId, agentId, 'b'))).toBe(true);
    expect(
      await moves(() => repos.workflows.replaceForAgent(orgId, agentId, [{ name: 'w', steps: [{ run: 'x' }] }], AT)),
    ).toBe(true);
    expect(await moves(() => repos.workflows.replaceForAgent(orgId, agentId, [], AT))).toBe(true);
    const tokenId = newId();
    expect(
      await moves(() =>
        repos.apiTokens.insert(
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
    expect(await moves(() => repos.apiTokens.revoke(orgId, tokenId, AT))).toBe(true);
    expect(await moves(() => db.prepare('DELETE FROM api_tokens').run())).toBe(true);
    expect(await moves(() => repos.agents.revoke(orgId, agentId, AT))).toBe(true);
    expect(await moves(() => db.prepare('DELETE FROM workflows').run())).toBe(true);
    expect(await moves(() => db.prepare('DELETE FROM agents').run())).toBe(true);
  });

  it('moves when a trigger is written', async () => {
    const agentId = await enroll();
    const id = newId();
    const trigger = triggerRow({ id, orgId, agentId, createdAt: AT, updatedAt: AT });
    expect(await moves(() => repos.triggers.insert(trigger))).toBe(true);
    expect(await moves(() => repos.triggers.update({ ...trigger, name: 'u' }))).toBe(true);
    expect(await moves(() => repos.triggers.softDelete(orgId, id, AT))).toBe(true);
  });

  it('stays put when other tables are written', async () => {
    expect(
      await moves(() =>
        repos.audit.insertMany([{ orgId, actorType: 'system', actorId: null, action: 'x', createdAt: AT }]),
      ),
    ).toBe(false);
    expect(
      await moves(() =>
        repos.storageBindings.insert({
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
    expect(await moves(() => repos.orgs.create({ id: newId(), name: 'other', createdAt: AT }, userId))).toBe(true);
  });
});

describe('change counter readings', () => {
  let dir: string;
  let db: Db;
  let other: Db;
  let repos: Repositories;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-counter-'));
    db = openDatabase(path.join(dir, 'drover.sqlite'));
    migrate(db);
    repos = createSqliteRepositories(db);
    // Another process's connection, like the CLI's.
    other = openDatabase(path.join(dir, 'drover.sqlite'));
  });
  afterEach(() => {
    other.close();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  it("serves one reading for the rest of the event-loop turn; another process's write is seen at the next turn", async () => {
    const first = await repos.changeCounter.generation();
    other.prepare('UPDATE change_counter SET generation = generation + 1 WHERE id = 1').run();
    expect(await repos.changeCounter.generation()).toBe(first);
    await nextTurn();
    expect(await repos.changeCounter.generation()).toBe(first + 1);
  });

  it('never keeps a reading taken inside a transaction that is then rolled back', async () => {
    const first = await repos.changeCounter.generation();
    let inside: Promise<number> | undefined;
    const bump = db.prepare('UPDATE change_counter SET generation = generation + 1 WHERE id = 1');
    expect(() =>
      db.transaction(() => {
        bump.run();
        inside = repos.changeCounter.generation();
        throw new Error('roll back');
      })(),
    ).toThrow('roll back');
    expect(await inside).toBe(first + 1);
    expect(await repos.changeCounter.generation()).toBe(first);
  });

  it("sees this process's own write at once, within the same turn", async () => {
    const first = await repos.changeCounter.generation();
    const userId = newId();
    await repos.users.insert({ id: userId, email: 'own@example.test', passwordHash: 'x', createdAt: AT });
    await repos.orgs.create({ id: newId(), name: 'acme', createdAt: AT }, userId); // a membership: counted
    expect(await repos.changeCounter.generation()).toBeGreaterThan(first);
  });
});
