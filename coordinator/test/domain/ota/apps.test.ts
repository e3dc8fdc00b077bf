import { generateKeyPairSync } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../../src/db/database.js';
import { migrate } from '../../../src/db/migrate.js';
import { GroupCommitExecutor } from '../../../src/db/writer/executor.js';
import type { Application } from '../../../src/domain/model/applications.js';
import type { Repositories } from '../../../src/domain/model/repositories.js';
import { updateApp } from '../../../src/domain/ota/apps.js';
import type { OtaContext } from '../../../src/domain/ota/context.js';
import type { DeviceGroupService } from '../../../src/domain/ota/device-groups.js';
import { createSqliteRepositories } from '../../../src/sqlite-repositories.js';
import { newId } from '../../../src/util/ids.js';
import { orgWithAgent } from '../../db/contract/fixture.js';

/** An application's PATCH (domain/ota/apps.ts) over a real database. */

const AT = '2026-03-01T12:00:00.000Z';

/** The standard base64 of a new raw Ed25519 public key. */
const releaseKey = () =>
  Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64');

describe('updateApp', () => {
  let db: Db;
  let repos: Repositories;
  beforeEach(() => {
    db = openDatabase(':memory:');
    migrate(db);
    repos = createSqliteRepositories(db, new GroupCommitExecutor(db));
  });
  afterEach(() => db.close());

  it('writes nothing of a change that lost the race for the release keys, and says so (409), even to the same keys', async () => {
    const { orgId, userId } = await orgWithAgent(repos, AT);
    const stored: Application = {
      id: newId(),
      orgId,
      slug: 'firmware',
      updateWorkflowName: 'update',
      defaultChannel: 'stable',
      notify: null,
      deviceSelector: null,
      maintenanceWindow: null,
      releaseKeys: null,
      releaseKeyRotations: [],
      createdAt: AT,
      deletedAt: null,
    };
    await repos.applications.insert(stored);
    const keys = [releaseKey()];
    // This change read the application without keys; another one set these very keys before it wrote.
    await repos.applications.update(orgId, stored.id, { releaseKeys: { keys, rotations: [], from: null } });
    const ctx = {
      repos: { ...repos, applications: { ...repos.applications, findInOrg: async () => stored } },
      clock: { now: () => Date.parse(AT) },
      ota: { evaluateIds: async () => {} },
    } as unknown as OtaContext & { deviceGroups: DeviceGroupService };

    await expect(
      updateApp(ctx, { orgId, userId }, stored.id, { defaultChannel: 'beta', releaseKeys: keys }),
    ).rejects.toMatchObject({
      code: 'conflict',
      message:
        'The release keys of firmware changed while this change was checked; nothing was changed: read the application and try again',
    });
    expect(await repos.applications.findInOrg(orgId, stored.id)).toMatchObject({
      defaultChannel: 'stable',
      releaseKeys: keys,
    });
  });
});
