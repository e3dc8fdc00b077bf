import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateEd25519KeyPair } from '@drover/shared';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { ApiClient } from '../helpers/http.js';
import { addUser, MEMBER_PASSWORD } from '../helpers/members.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * A coordinator stopped and started again on the same data directory keeps everything: users,
 * organizations, memberships, enrollment tokens, API tokens, sessions and its server key.
 */
describe('a restart on the same data directory', () => {
  const dataDir = makeTempDir();
  const running: TestCoordinator[] = [];
  afterAll(async () => {
    for (const t of running) await t.close();
  });

  it('keeps members, organizations, tokens, sessions and the server key', async () => {
    const before = await startTestCoordinator({ dataDir });
    running.push(before);
    const keyFile = path.join(dataDir, 'server-ed25519.key');
    // The server key is a file only its user reads on SQLite; on PostgreSQL, a row of the database.
    const expectKeyAtRest = () =>
      before.sql.kind === 'sqlite'
        ? expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600)
        : expect(fs.existsSync(keyFile)).toBe(false);
    expectKeyAtRest();
    const serverKey = before.coordinator.ctx.serverKey.publicKey;

    const member = await addUser(before.owner, before.orgId, 'restart-member@example.test');
    const org = await before.owner.post('/orgs', { body: { name: 'second org' } });
    expect(org.status).toBe(201);
    const enrollment = await before.owner.post(`/orgs/${before.orgId}/enrollment-tokens`, { body: { name: 'later' } });
    expect(enrollment.status).toBe(201);
    const apiToken = await issueApiToken(
      before.owner,
      before.orgId,
      [{ type: 'storage', bindingIds: null, permissions: ['read'] }],
      {
        name: 'survives',
        rateLimitPerMinute: 10,
      },
    );
    const orgsBefore = await before.owner.get('/orgs');
    const membersBefore = await before.owner.get(`/orgs/${before.orgId}/members`);
    const tokensBefore = await before.owner.get(`/orgs/${before.orgId}/api-tokens`);
    const sessionToken = before.owner.token!;
    await before.close();

    const after = await startTestCoordinator({ dataDir });
    running.push(after);
    expect(after.coordinator.bootstrap.created).toBe(false);
    // Listening on port 0 without a configured public URL: the public URL names the real port.
    expect(after.coordinator.ctx.config.publicUrl).toBe(after.url);
    expect(after.coordinator.ctx.serverKey.publicKey).toBe(serverKey);
    expectKeyAtRest();

    // A session issued before the restart still works: its signing key lives in the database.
    const oldSession = new ApiClient(after.baseUrl, sessionToken);
    const orgsAfter = await oldSession.get('/orgs');
    expect(orgsAfter.status).toBe(200);
    expect(orgsAfter.body).toEqual(orgsBefore.body);
    expect(orgsAfter.body.map((o: { name: string }) => o.name)).toContain('second org');

    expect((await oldSession.get(`/orgs/${after.orgId}/members`)).body).toEqual(membersBefore.body);
    expect((await oldSession.get(`/orgs/${after.orgId}/api-tokens`)).body).toEqual(tokensBefore.body);
    const memberClient = await after.api.login('restart-member@example.test', MEMBER_PASSWORD);
    expect((await memberClient.get(`/orgs/${after.orgId}`)).body.role).toBe('member');
    expect(member.userId).toBeTruthy();

    const token = await after.api.get('/token', { token: apiToken.token });
    expect(token.status).toBe(200);
    expect(token.body.name).toBe('survives');

    // The enrollment token issued before the restart enrolls an agent, which pins the same key.
    const enrolled = await after.api.post('/agent/enroll', {
      body: {
        enrollmentToken: enrollment.body.token,
        publicKey: generateEd25519KeyPair().publicKey,
        hostname: os.hostname(),
        os: 'test',
        agentVersion: '0.1.0-test',
      },
    });
    expect(enrolled.status, enrolled.text).toBe(201);
    expect(enrolled.body.serverPublicKey).toBe(serverKey);
    expect(enrolled.body.orgId).toBe(after.orgId);
  });
});
