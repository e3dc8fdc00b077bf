import type { Config } from '../../config/config.js';
import type { Repositories } from '../model/repositories.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashPassword } from '../auth/passwords.js';

export interface BootstrapResult {
  created: boolean;
  email?: string;
  orgId?: string;
  orgName?: string;
}

/**
 * First start with an empty database and bootstrap settings: creates the owner, the organization
 * and its default `local` storage binding. A database that already has users is left alone, and
 * of several coordinators starting at once on an empty one, the first to insert its owner goes on
 * (`insertIfNone`); the others leave it alone.
 */
export async function bootstrapIfEmpty(
  repos: Repositories,
  bootstrap: Config['bootstrap'],
  clock: Clock,
): Promise<BootstrapResult> {
  if (!bootstrap || (await repos.users.count()) > 0) return { created: false };
  const at = new Date(clock.now()).toISOString();
  const userId = newId();
  const inserted = await repos.users.insertIfNone({
    id: userId,
    email: bootstrap.email,
    passwordHash: bootstrap.passwordHash ?? (await hashPassword(bootstrap.password)),
    createdAt: at,
  });
  if (!inserted) return { created: false };
  const orgId = await createOrganization(repos, bootstrap.org, userId, at);
  return { created: true, email: bootstrap.email, orgId, orgName: bootstrap.org };
}

/** A new organization with its owner and its default local storage binding. */
export async function createOrganization(
  repos: Repositories,
  name: string,
  ownerId: string,
  at: string,
): Promise<string> {
  const orgId = newId();
  await repos.orgs.create({ id: orgId, name, createdAt: at }, ownerId);
  await repos.storageBindings.insert({
    id: newId(),
    orgId,
    name: 'local',
    backend: 'local',
    config: {},
    isDefault: true,
    createdAt: at,
  });
  return orgId;
}
