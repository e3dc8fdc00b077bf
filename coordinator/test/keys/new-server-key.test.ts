import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import type { Repositories } from '../../src/domain/model/repositories.js';
import { SERVER_KEY_FILE } from '../../src/domain/secrets/server-key.js';
import { loadKeys } from '../../src/keys.js';
import { createSqliteRepositories } from '../../src/sqlite-repositories.js';
import { systemClock } from '../../src/util/clock.js';
import { seedOrgWithAgent } from '../db/fixture.js';

/**
 * A coordinator that makes itself a new server key for a database whose agents pinned the
 * previous one (its key file deleted, or a data directory restored without it) says so at start:
 * those agents go on running jobs, and refuse every over-the-air manifest it signs.
 */

let db: Db;
let repos: Repositories;
let dataDir: string;
let errors: string[];
const logger = () => pino({ level: 'error' }, { write: (line: string) => errors.push(JSON.parse(line).msg) });

beforeEach(() => {
  db = openDatabase(':memory:');
  migrate(db);
  repos = createSqliteRepositories(db);
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-new-server-key-'));
  errors = [];
});
afterEach(() => {
  db.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('a new server key', () => {
  it('made for a database whose agents were enrolled with another one is an error of the log, naming what to do', async () => {
    const { agentId } = await seedOrgWithAgent(db, repos);
    await repos.agents.markConnected(agentId, '2030-01-01T00:00:00.000Z');
    const first = await loadKeys('sqlite', dataDir, repos, systemClock, logger());
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBe(
      'a new server key was made (none was stored), but 1 agent was enrolled with the previous one: they ' +
        'refuse every over-the-air manifest this one signs until each enrolls again. To keep them, stop the ' +
        `coordinator, put the previous key back (a backup holds it: tar -xzf <backup> -C ${dataDir} ` +
        `${SERVER_KEY_FILE}) and start it again (docs/operations.md, "The data directory")`,
    );
    // The next start finds the key it made: nothing more to say.
    const again = await loadKeys('sqlite', dataDir, repos, systemClock, logger());
    expect(again.serverKey.publicKey).toBe(first.serverKey.publicKey);
    expect(errors).toHaveLength(1);
  });

  it('made for a database without agents (the first start) is said nothing of', async () => {
    await loadKeys('sqlite', dataDir, repos, systemClock, logger());
    expect(errors).toEqual([]);
  });
});
