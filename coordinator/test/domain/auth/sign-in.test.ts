import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/db/database.js';
import { migrate } from '../../../src/db/migrate.js';
import { hashPassword } from '../../../src/domain/auth/passwords.js';
import { SignInService, type SignInDeps } from '../../../src/domain/auth/sign-in.js';
import { createSqliteRepositories } from '../../../src/sqlite-repositories.js';

const PASSWORD = 'émile’s own password';

async function setup() {
  const db = openDatabase(':memory:');
  migrate(db);
  const repos = createSqliteRepositories(db);
  await repos.users.insert({
    id: 'emile',
    email: 'émile@x.test',
    passwordHash: await hashPassword(PASSWORD),
    createdAt: '2026-06-01T00:00:00.000Z',
  });
  const deps = {
    users: repos.users,
    orgs: repos.orgs,
    audit: { record: async () => undefined },
    clock: { now: () => Date.parse('2026-06-01T00:00:00Z') },
    logger: pino({ level: 'silent' }),
  } as unknown as SignInDeps;
  return { db, signIn: new SignInService(deps) };
}

describe('the failures of a sign-in', () => {
  it('count for the account the email names: ÉMILE@… does not lock émile@…, éMILE@… does', async () => {
    const { db, signIn } = await setup();
    const from = '192.0.2.1';
    // Another account (the databases fold ASCII letters only): its failures are its own.
    for (let i = 0; i < 6; i++) expect(await signIn.checkPassword('ÉMILE@x.test', 'wrong', from)).toBeNull();
    await expect(signIn.checkPassword('ÉMILE@x.test', 'wrong', from)).rejects.toMatchObject({ statusCode: 429 });
    expect(await signIn.checkPassword('émile@x.test', PASSWORD, from)).toMatchObject({ id: 'emile' });
    // The same account in another case of its ASCII letters.
    for (let i = 0; i < 6; i++) expect(await signIn.checkPassword('éMILE@x.test', 'wrong', from)).toBeNull();
    await expect(signIn.checkPassword('émile@X.TEST', PASSWORD, from)).rejects.toMatchObject({ statusCode: 429 });
    db.close();
  });
});
