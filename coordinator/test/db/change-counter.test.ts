import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import { newId } from '../../src/util/ids.js';

const AT = '2026-01-02T03:04:05.000Z';

/** What the change counter moves on is in the contract suite (contract/change-counter.test.ts); here, SQLite's readings. */
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
