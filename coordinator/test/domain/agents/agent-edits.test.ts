import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseSelector } from '@drover/shared';
import { openDatabase, type Db } from '../../../src/db/database.js';
import { migrate } from '../../../src/db/migrate.js';
import { createSqliteRepositories } from '../../../src/sqlite-repositories.js';
import type { Repositories } from '../../../src/domain/model/repositories.js';
import type { AgentRepository } from '../../../src/domain/model/agents.js';
import { AuditLog } from '../../../src/domain/audit/audit-log.js';
import { relabelMatching } from '../../../src/domain/agents/agent-edits.js';
import { systemClock } from '../../../src/util/clock.js';
import { AppError } from '../../../src/errors.js';
import { newId } from '../../../src/util/ids.js';
import { enrollAgent } from '../../db/fixture.js';

const AT = '2030-01-01T00:00:00.000Z';

/**
 * The labels of many agents changed at once (`relabelMatching`), over a real SQLite database: when
 * the change stops halfway, the agents it changed still move into or out of the device groups, and
 * the same change made again moves those it had changed before as well as the rest.
 */
describe('relabelMatching', () => {
  let db: Db;
  let repos: Repositories;
  let orgId: string;
  let userId: string;
  const passes: string[][] = [];
  const deviceGroups = {
    agentsChanged: async (_org: string, ids: readonly string[]) => void passes.push([...ids].sort()),
  };

  beforeEach(async () => {
    db = openDatabase(':memory:');
    migrate(db);
    repos = createSqliteRepositories(db);
    userId = newId();
    await repos.users.insert({ id: userId, email: 'u@example.test', passwordHash: 'x', createdAt: AT });
    orgId = newId();
    await repos.orgs.create({ id: orgId, name: 'acme', createdAt: AT }, userId);
    passes.length = 0;
  });
  afterEach(() => db.close());

  const kiosks = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const id = await enrollAgent(repos, orgId, AT, { name: `kiosk-${i}` });
      await repos.agents.setReportedLabels(id, { os: 'linux', arch: 'x64', role: 'kiosk' });
      ids.push(id);
    }
    return ids;
  };
  const relabel = (agents: AgentRepository) =>
    relabelMatching(
      { agents, audit: new AuditLog(repos.audit, systemClock), deviceGroups },
      { orgId, userId },
      { source: 'role=kiosk', requirements: parseSelector('role=kiosk') },
      { set: { ring: 'canary' }, remove: [] },
      false,
    );

  it('passes the device groups over the agents it changed when another agent stops it halfway, and over all when made again', async () => {
    const [a, b, c] = await kiosks(3);
    // Another writer changes c again and again: its change gives up, a and b are changed.
    const contested: AgentRepository = {
      ...repos.agents,
      edit: (org, id, revision, edit) =>
        id === c ? Promise.resolve('changed') : repos.agents.edit(org, id, revision, edit),
    };
    const stopped = await relabel(contested).catch((error: unknown) => error);
    expect(stopped).toBeInstanceOf(AppError);
    expect((stopped as AppError).code).toBe('conflict');
    for (const id of [a!, b!]) expect((await repos.agents.findById(id))?.operatorLabels).toEqual({ ring: 'canary' });
    expect((await repos.agents.findById(c!))?.operatorLabels).toEqual({});
    expect(passes).toEqual([[a!, b!].sort()]);

    const again = await relabel(repos.agents);
    expect(again).toMatchObject({ matching: 3, agents: [{ id: c }] });
    expect(passes[1]).toEqual([a!, b!, c!].sort());
  });
});
