import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  generateEd25519KeyPair,
  isValidEd25519PublicKey,
  privateKeyFromBase64,
  publicKeyOf,
  type EnrollResponse,
} from '@drover/shared';
import { auditEntries } from '../helpers/audit.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import {
  enrollTestAgent,
  insertEnrollmentToken,
  signedAgentClient,
  workflow,
  type TestAgent,
} from '../helpers/agent.js';

const SERVER_KEY_FILE = 'server-ed25519.key';

function enrollBody(token: string, extra: Record<string, unknown> = {}) {
  return {
    enrollmentToken: token,
    publicKey: generateEd25519KeyPair().publicKey,
    hostname: 'edge-01',
    os: 'linux 6.8',
    agentVersion: '0.1.0',
    ...extra,
  };
}

function expectError(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ statusCode: status, code, message: expect.any(String) });
}

describe('agent enrollment', () => {
  let t: TestCoordinator;
  beforeAll(async () => {
    t = await startTestCoordinator();
  });
  afterAll(() => t?.close());

  it('registers a pending agent and answers with the ids and the pinned server key', async () => {
    const token = await insertEnrollmentToken(t);
    const body = enrollBody(token);
    const res = await t.api.post<EnrollResponse>('/agent/enroll', { body });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['agentId', 'orgId', 'serverPublicKey']);
    expect(res.body.orgId).toBe(t.orgId);
    // The key made at the first start: a file of the data directory on SQLite; on PostgreSQL, a row
    // of the database that every coordinator on it shares, and no file.
    const keyFile = path.join(t.dataDir, SERVER_KEY_FILE);
    const seed =
      t.sql.kind === 'sqlite'
        ? fs.readFileSync(keyFile, 'utf8').trim()
        : (await t.sql.get<{ value: string }>("SELECT value FROM server_secrets WHERE name = 'server_ed25519_key'"))!
            .value;
    if (t.sql.kind === 'postgres') expect(fs.existsSync(keyFile)).toBe(false);
    expect(res.body.serverPublicKey).toBe(publicKeyOf(privateKeyFromBase64(seed)));
    expect(res.body.serverPublicKey).toBe(t.coordinator.ctx.serverKey.publicKey);

    const agent = await t.owner.get(`/orgs/${t.orgId}/agents/${res.body.agentId}`);
    expect(agent.status).toBe(200);
    expect(agent.body).toMatchObject({
      name: 'edge-01',
      hostname: 'edge-01',
      os: 'linux 6.8',
      agentVersion: '0.1.0',
      status: 'pending',
      lastSeenAt: null,
    });
    // The public key it enrolled with is not in the API.
    expect((await t.coordinator.ctx.repos.agents.findById(res.body.agentId))?.publicKey).toBe(body.publicKey);
    const listed = await t.owner.get(`/orgs/${t.orgId}/agents`);
    expect(listed.status).toBe(200);
    const entry = listed.body.find((a: { id: string }) => a.id === res.body.agentId);
    expect(entry).toMatchObject({ name: 'edge-01', status: 'pending' });
    expect(entry).not.toHaveProperty('publicKey');
  });

  it('records the enrollment in the audit log as done by the agent, without the token', async () => {
    const token = await insertEnrollmentToken(t);
    const res = await t.api.post<EnrollResponse>('/agent/enroll', { body: enrollBody(token) });
    expect(res.status).toBe(201);
    const entries = await auditEntries(t.owner, t.orgId, 'agent.enroll');
    const entry = entries.find((e) => e.targetId === res.body.agentId);
    expect(entry).toMatchObject({ actorType: 'agent', actorId: res.body.agentId, targetType: 'agent' });
    expect(JSON.stringify(entry)).not.toContain(token);
  });

  it('names the agent as asked, else after its hostname', async () => {
    const named = await t.api.post('/agent/enroll', {
      body: enrollBody(await insertEnrollmentToken(t), { name: '  Kiosk 7  ' }),
    });
    expect(named.status).toBe(201);
    expect((await t.owner.get(`/orgs/${t.orgId}/agents/${named.body.agentId}`)).body.name).toBe('Kiosk 7');
  });

  it('accepts a token issued through the dashboard API', async () => {
    const issued = await t.owner.post(`/orgs/${t.orgId}/enrollment-tokens`, { body: {} });
    expect(issued.status).toBe(201);
    expect(issued.body.token).toMatch(/^drve_/);
    const res = await t.api.post('/agent/enroll', { body: enrollBody(issued.body.token) });
    expect(res.status).toBe(201);
  });

  it('refuses a token that was already used', async () => {
    const token = await insertEnrollmentToken(t);
    expect((await t.api.post('/agent/enroll', { body: enrollBody(token) })).status).toBe(201);
    const again = await t.api.post('/agent/enroll', { body: enrollBody(token) });
    expectError(again, 401, 'unauthorized');
    expect(again.body.message).toMatch(/already been used/);
  });

  it('refuses an expired token', async () => {
    const token = await insertEnrollmentToken(t, { expiresAt: new Date(Date.now() - 1000).toISOString() });
    const res = await t.api.post('/agent/enroll', { body: enrollBody(token) });
    expectError(res, 401, 'unauthorized');
    expect(res.body.message).toMatch(/expired/);
  });

  it('refuses an unknown token, and a real token of another shape', async () => {
    for (const token of ['drve_doesnotexist', 'x', 'drv_' + 'a'.repeat(43)]) {
      const res = await t.api.post('/agent/enroll', { body: enrollBody(token) });
      expectError(res, 401, 'unauthorized');
      expect(res.body.message).toMatch(/not valid/);
    }
  });

  it('refuses a public key that is not 32 raw bytes of a curve point, without spending the token', async () => {
    const token = await insertEnrollmentToken(t);
    const notAPoint = (() => {
      // 32 bytes that encode no curve point at all (about half of all byte strings are such).
      for (let i = 2; ; i++) {
        const raw = Buffer.alloc(32);
        raw.writeUInt16LE(i);
        if (!isValidEd25519PublicKey(raw)) return raw.toString('base64');
      }
    })();
    const badKeys = [
      Buffer.alloc(31, 7).toString('base64'), // 44 characters, but 31 bytes
      Buffer.alloc(33, 7).toString('base64'), // 44 characters, but 33 bytes
      Buffer.alloc(32, 0xff).toString('base64url') + '=', // base64url alphabet
      `${Buffer.alloc(32, 1).toString('base64').slice(0, 42)}B=`, // non-canonical last character
      Buffer.concat([Buffer.from([1]), Buffer.alloc(31)]).toString('base64'), // the identity: small order
      Buffer.alloc(32).toString('base64'), // y = 0: order 4
      notAPoint,
      'A'.repeat(43),
      ' '.repeat(44),
    ];
    for (const publicKey of badKeys) {
      const res = await t.api.post('/agent/enroll', { body: enrollBody(token, { publicKey }) });
      expectError(res, 422, 'validation_failed');
      expect(res.body.details, publicKey).toEqual([{ path: 'body.publicKey', message: expect.any(String) }]);
    }
    expect((await t.api.post('/agent/enroll', { body: enrollBody(token) })).status).toBe(201);
  });

  it('refuses a public key another agent has, of any organization or revoked, without spending the token', async () => {
    // The signature does not cover X-Agent-Id: a request signed for one agent would pass for
    // every agent with the same key (each has its own nonces), so a key is one agent's only.
    const keys = generateEd25519KeyPair();
    const first = await t.api.post<EnrollResponse>('/agent/enroll', {
      body: enrollBody(await insertEnrollmentToken(t), { publicKey: keys.publicKey }),
    });
    expect(first.status).toBe(201);
    const otherOrg = await t.owner.post<{ id: string }>('/orgs', { body: { name: 'Key reuse' } });
    expect(otherOrg.status).toBe(201);
    const tokens = [await insertEnrollmentToken(t), await insertEnrollmentToken(t, { orgId: otherOrg.body.id })];
    for (const token of tokens) {
      const again = await t.api.post('/agent/enroll', { body: enrollBody(token, { publicKey: keys.publicKey }) });
      expectError(again, 422, 'validation_failed');
      expect(again.body.details).toEqual([
        { path: 'body.publicKey', message: expect.stringMatching(/already the key of an enrolled agent/) },
      ]);
    }
    expect((await t.owner.delete(`/orgs/${t.orgId}/agents/${first.body.agentId}`)).status).toBe(200);
    const afterRevoke = await t.api.post('/agent/enroll', {
      body: enrollBody(tokens[0]!, { publicKey: keys.publicKey }),
    });
    expectError(afterRevoke, 422, 'validation_failed');
    // Neither token was spent.
    for (const token of tokens)
      expect((await t.api.post('/agent/enroll', { body: enrollBody(token) })).status).toBe(201);
  });

  it('refuses bodies with missing fields, unknown fields, wrong types or huge strings', async () => {
    const token = await insertEnrollmentToken(t);
    const cases: [unknown, string][] = [
      [{ ...enrollBody(token), hostname: undefined }, 'body.hostname'],
      [{ ...enrollBody(token), enrollmentToken: undefined }, 'body.enrollmentToken'],
      [{ ...enrollBody(token), extra: true }, 'body.extra'],
      [{ ...enrollBody(token), os: 42 }, 'body.os'],
      [{ ...enrollBody(token), agentVersion: null }, 'body.agentVersion'],
      [{ ...enrollBody(token), hostname: 'h'.repeat(100_000) }, 'body.hostname'],
      [{ ...enrollBody(token), enrollmentToken: 't'.repeat(10_000) }, 'body.enrollmentToken'],
      [{ ...enrollBody(token), name: '' }, 'body.name'],
      [{ ...enrollBody(token), name: '   ' }, 'body.name'],
      [{ ...enrollBody(token), hostname: 'bad\u0007host' }, 'body.hostname'],
      // With a name of its own too: the host name, the OS and the version are shown as well.
      [{ ...enrollBody(token), name: 'ok', hostname: 'h\u001bx' }, 'body.hostname'],
      [{ ...enrollBody(token), os: 'linux\u001b[31m' }, 'body.os'],
      // Bidirectional overrides and isolates: the host name would show in another order.
      [{ ...enrollBody(token), hostname: 'edge\u202egpj.exe' }, 'body.hostname'],
      [{ ...enrollBody(token), name: 'rack\u2066 4' }, 'body.name'],
      [{ ...enrollBody(token), agentVersion: '0.1\u0000' }, 'body.agentVersion'],
    ];
    for (const [body, pathName] of cases) {
      const res = await t.api.post('/agent/enroll', { body });
      expectError(res, 422, 'validation_failed');
      expect(
        res.body.details.map((d: { path: string }) => d.path),
        JSON.stringify(body).slice(0, 80),
      ).toContain(pathName);
    }
    // The refusal names the character it found.
    const bidi = await t.api.post('/agent/enroll', { body: { ...enrollBody(token), hostname: 'edge\u202egpj.exe' } });
    expect(bidi.body.details).toEqual([
      {
        path: 'body.hostname',
        message: expect.stringMatching(/^must not contain bidirectional formatting characters .*, got U\+202E$/),
      },
    ]);
    for (const rawBody of ['', '{', '[]', 'null', '"x"']) {
      const res = await t.api.post('/agent/enroll', { rawBody, headers: { 'content-type': 'application/json' } });
      expect(res.status, rawBody).toBeGreaterThanOrEqual(400);
      expect(res.status, rawBody).toBeLessThan(500);
      expect(res.body.code).toEqual(expect.any(String));
    }
    // None of these spent the token.
    expect((await t.api.post('/agent/enroll', { body: enrollBody(token) })).status).toBe(201);
  });

  it('makes exactly one agent when ten enrollments race with one token', async () => {
    const token = await insertEnrollmentToken(t);
    const agents = async () => (await t.owner.get<{ id: string }[]>(`/orgs/${t.orgId}/agents`)).body;
    const before = (await agents()).length;
    const results = await Promise.all(
      Array.from({ length: 10 }, () => t.api.post('/agent/enroll', { body: enrollBody(token) })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(401)]);
    const after = await agents();
    expect(after.length).toBe(before + 1);
    const winner = results.find((r) => r.status === 201)!;
    expect(after.some((a) => a.id === winner.body.agentId)).toBe(true);
  });
});

describe('signed agent requests', () => {
  let t: TestCoordinator;
  let agent: TestAgent;
  beforeAll(async () => {
    t = await startTestCoordinator();
    agent = await enrollTestAgent(t.api, t.orgId, {
      enrollmentToken: await insertEnrollmentToken(t),
      hostname: 'edge-me',
    });
  });
  afterAll(() => t?.close());

  it('accepts a correctly signed request and tells the agent who it is', async () => {
    const res = await agent.request('GET', '/v1/agent/me');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ agentId: agent.agentId, orgId: t.orgId, name: 'edge-me', status: 'pending' });
  });

  it('refuses a replayed nonce', async () => {
    const nonce = 'replay-nonce-0123456789';
    expect((await agent.request('GET', '/v1/agent/me', undefined, { nonce })).status).toBe(200);
    const replay = await agent.request('GET', '/v1/agent/me', undefined, { nonce });
    expectError(replay, 401, 'unauthorized');
    expect(replay.body.message).toMatch(/nonce/i);
    // Also when the replay is a different request: the nonce is spent for the agent.
    const other = await agent.request('PUT', '/v1/agent/workflows', { workflows: [] }, { nonce });
    expectError(other, 401, 'unauthorized');
  });

  it('does not spend a nonce on a request that fails verification', async () => {
    const nonce = 'forged-first-0123456789';
    const forged = await agent.request('GET', '/v1/agent/me', undefined, {
      nonce,
      privateKey: privateKeyFromBase64(generateEd25519KeyPair().privateKey),
    });
    expectError(forged, 401, 'unauthorized');
    expect((await agent.request('GET', '/v1/agent/me', undefined, { nonce })).status).toBe(200);
  });

  it('refuses a timestamp 301 s in the past or the future and accepts one 299 s off', async () => {
    for (const offset of [-301_000, 301_000]) {
      const res = await agent.request('GET', '/v1/agent/me', undefined, { now: Date.now() + offset });
      expectError(res, 401, 'unauthorized');
      expect(res.body.message).toMatch(/X-Timestamp/);
    }
    for (const offset of [-299_000, 299_000]) {
      expect((await agent.request('GET', '/v1/agent/me', undefined, { now: Date.now() + offset })).status).toBe(200);
    }
  });

  it('refuses a signature made with another key', async () => {
    const res = await agent.request('GET', '/v1/agent/me', undefined, {
      privateKey: privateKeyFromBase64(generateEd25519KeyPair().privateKey),
    });
    expectError(res, 401, 'unauthorized');
    expect(res.body.message).toMatch(/signature/);
  });

  it('refuses a body that differs from the signed one by a single byte', async () => {
    const sent = JSON.stringify({ workflows: [] });
    const res = await agent.request('PUT', '/v1/agent/workflows', undefined, {
      rawBody: sent,
      signBody: JSON.stringify({ workflows: [] }) + ' ',
    });
    expectError(res, 401, 'unauthorized');
    const reformatted = await agent.request('PUT', '/v1/agent/workflows', undefined, {
      rawBody: '{ "workflows": [] }',
      signBody: sent,
    });
    expectError(reformatted, 401, 'unauthorized');
  });

  it('refuses a path or query string that differs from the signed one', async () => {
    expectError(
      await agent.request('GET', '/v1/agent/me?a=2', undefined, { signPath: '/v1/agent/me?a=1' }),
      401,
      'unauthorized',
    );
    expectError(
      await agent.request('GET', '/v1/agent/me', undefined, { signPath: '/v1/agent/me?a=1' }),
      401,
      'unauthorized',
    );
    expectError(
      await agent.request('GET', '/v1/agent/me?a=1', undefined, { signPath: '/v1/agent/me' }),
      401,
      'unauthorized',
    );
    expectError(
      await agent.request('PUT', '/v1/agent/workflows', { workflows: [] }, { signPath: '/v1/agent/me' }),
      401,
      'unauthorized',
    );
    // A correctly signed query string passes the signature, then meets the route's schema (no query).
    expectError(await agent.request('GET', '/v1/agent/me?a=1'), 422, 'validation_failed');
  });

  it('refuses an unknown agent id', async () => {
    const res = await agent.request('GET', '/v1/agent/me', undefined, {
      agentId: '00000000-0000-4000-8000-000000000000',
    });
    expectError(res, 401, 'unauthorized');
    expect(res.body.message).toMatch(/Unknown agent/);
  });

  it('refuses every request of a revoked agent', async () => {
    const victim = await enrollTestAgent(t.api, t.orgId, { enrollmentToken: await insertEnrollmentToken(t) });
    expect((await victim.request('GET', '/v1/agent/me')).status).toBe(200);
    const revoked = await t.owner.delete(`/orgs/${t.orgId}/agents/${victim.agentId}`);
    expect(revoked.status).toBe(200);
    const me = await victim.request('GET', '/v1/agent/me');
    expectError(me, 401, 'unauthorized');
    expect(me.body.message).toMatch(/revoked/);
    expectError(await victim.putWorkflows([workflow('x')]), 401, 'unauthorized');
    // Someone without the key learns nothing about the revocation.
    const forged = await victim.request('GET', '/v1/agent/me', undefined, {
      privateKey: privateKeyFromBase64(generateEd25519KeyPair().privateKey),
    });
    expect(forged.body.message).not.toMatch(/revoked/);
  });

  it('refuses requests with missing or malformed signature headers with the error shape', async () => {
    const cases: Partial<Parameters<TestAgent['request']>[3]>[] = [
      { omitHeaders: ['x-agent-id'] },
      { omitHeaders: ['x-timestamp'] },
      { omitHeaders: ['x-nonce'] },
      { omitHeaders: ['x-signature'] },
      { omitHeaders: ['x-agent-id', 'x-timestamp', 'x-nonce', 'x-signature'] },
      { headers: { 'x-agent-id': 'not-a-uuid' } },
      { headers: { 'x-timestamp': 'yesterday' } },
      { headers: { 'x-timestamp': String(Date.now() / 1000) } },
      { headers: { 'x-nonce': 'short' } },
      { headers: { 'x-nonce': 'has spaces in it 0123' } },
      { headers: { 'x-signature': 'not base64!' } },
      { headers: { 'x-signature': Buffer.alloc(64).toString('base64') } },
      { headers: { 'x-signature': Buffer.alloc(65).toString('base64') } },
    ];
    for (const overrides of cases) {
      const res = await agent.request('GET', '/v1/agent/me', undefined, overrides);
      expectError(res, 401, 'unauthorized');
      expect(Object.keys(res.body).sort(), JSON.stringify(overrides)).toEqual([
        'code',
        'details',
        'message',
        'statusCode',
      ]);
      // The server's time, for an agent whose clock is off.
      expect(Math.abs(res.body.details.serverTime - Date.now())).toBeLessThan(10_000);
      expect(Math.abs(Date.parse(res.headers.get('date')!) - Date.now())).toBeLessThan(10_000);
    }
    // A plain unauthenticated call, and one with a bearer token instead of a signature.
    expectError(await t.api.get('/agent/me'), 401, 'unauthorized');
    expectError(await t.owner.get('/agent/me'), 401, 'unauthorized');
  });

  it('checks the signature before the body, so an unsigned bad body is a 401, not a 422', async () => {
    const res = await t.api.put('/agent/workflows', { body: { nonsense: true } });
    expectError(res, 401, 'unauthorized');
  });

  it('keeps nonces in the database, so a second coordinator on it refuses the replay', async () => {
    const second = await startTestCoordinator({ dataDir: t.dataDir });
    try {
      const nonce = 'two-coordinators-012345';
      expect((await agent.request('GET', '/v1/agent/me', undefined, { nonce })).status).toBe(200);
      const onSecond = signedAgentClient(second.baseUrl, agent, {
        publicKey: agent.publicKey,
        privateKey: seedOf(agent),
      });
      const replay = await onSecond.request('GET', '/v1/agent/me', undefined, { nonce });
      expectError(replay, 401, 'unauthorized');
      expect((await onSecond.request('GET', '/v1/agent/me')).status).toBe(200);
    } finally {
      await second.close();
    }
  });
});

/** The raw seed of a test agent's private key, standard base64. */
function seedOf(agent: TestAgent): string {
  const jwk = agent.privateKey.export({ format: 'jwk' });
  return Buffer.from(jwk.d!, 'base64url').toString('base64');
}

describe('PUT /v1/agent/workflows', () => {
  let t: TestCoordinator;
  let agent: TestAgent;
  beforeAll(async () => {
    t = await startTestCoordinator();
    agent = await enrollTestAgent(t.api, t.orgId, { enrollmentToken: await insertEnrollmentToken(t) });
  });
  afterAll(() => t?.close());

  const listed = async () =>
    (await t.owner.get<{ agentId: string; name: string }[]>(`/orgs/${t.orgId}/workflows`)).body;
  const names = async () => (await listed()).filter((w) => w.agentId === agent.agentId).map((w) => w.name);

  it('stores the set and answers the active workflows in their public shape', async () => {
    const res = await agent.putWorkflows([
      workflow('deploy', {
        secretsKeys: ['DEPLOY_TOKEN'],
        paramsSchema: [
          { name: 'ref', type: 'string', required: true, pattern: '^[a-z0-9]+$' },
          { name: 'env', type: 'enum', options: ['staging', 'prod'], default: 'staging', description: 'target' },
        ],
        timeout: 60_000,
      }),
      workflow('backup', { description: null, version: null }),
    ]);
    expect(res.status).toBe(200);
    expect(res.body.workflows.map((w: { name: string }) => w.name)).toEqual(['backup', 'deploy']);
    for (const w of res.body.workflows) {
      expect(Object.keys(w).sort()).toEqual(['agentId', 'description', 'id', 'name', 'paramsSchema', 'version']);
      expect(w.agentId).toBe(agent.agentId);
    }
    expect(res.body.workflows[0]).toMatchObject({ description: null, version: null, paramsSchema: null });
    expect(res.body.workflows[1].paramsSchema).toEqual([
      { name: 'ref', type: 'string', required: true, pattern: '^[a-z0-9]+$' },
      { name: 'env', type: 'enum', options: ['staging', 'prod'], default: 'staging', description: 'target' },
    ]);
    expect(res.text).not.toContain('DEPLOY_TOKEN');
    // Its steps, timeout and secret names are kept for the agent's jobs, and not in the API.
    const stored = await t.coordinator.ctx.repos.workflows.findActiveByAgentAndName(agent.agentId, 'deploy');
    expect(stored).toMatchObject({ secretsKeys: ['DEPLOY_TOKEN'], timeoutMs: 60_000, steps: [{ run: 'true' }] });
  });

  it('replaces the set: missing ones are removed, kept ones keep their id', async () => {
    const first = await agent.putWorkflows([workflow('a'), workflow('b')]);
    const idOfB = first.body.workflows.find((w: { name: string }) => w.name === 'b').id;
    const second = await agent.putWorkflows([workflow('b', { version: '2' }), workflow('c')]);
    expect(second.status).toBe(200);
    expect(second.body.workflows.map((w: { name: string }) => w.name)).toEqual(['b', 'c']);
    expect(second.body.workflows[0]).toMatchObject({ id: idOfB, version: '2' });
    expect(await names()).toEqual(['b', 'c']);
    const empty = await agent.putWorkflows([]);
    expect(empty.body).toEqual({ workflows: [] });
    expect(await names()).toEqual([]);
  });

  it('takes a set larger than the API body limit: 300 workflows of 2 KB descriptions and more', async () => {
    const many = Array.from({ length: 300 }, (_, i) =>
      workflow(`w${String(i).padStart(3, '0')}`, { description: 'd'.repeat(2000), steps: [{ run: 'x'.repeat(2000) }] }),
    );
    expect(Buffer.byteLength(JSON.stringify({ workflows: many }))).toBeGreaterThan(1024 * 1024);
    const res = await agent.putWorkflows(many);
    expect(res.status, res.text.slice(0, 200)).toBe(200);
    expect(res.body.workflows).toHaveLength(300);
    await agent.putWorkflows([]);
  });

  it('stores a NUL character of a description or version as U+FFFD on both databases, and the same set again changes nothing', async () => {
    const set = [workflow('nul', { description: 'built \u0000 by make', version: '1.0\u0000' })];
    const res = await agent.putWorkflows(set);
    expect(res.status, res.text).toBe(200);
    expect(res.body.workflows[0]).toMatchObject({ description: 'built \uFFFD by make', version: '1.0\uFFFD' });
    const stored = await t.coordinator.ctx.repos.workflows.findActiveByAgentAndName(agent.agentId, 'nul');
    const again = await agent.putWorkflows(set);
    expect(again.body.workflows[0]).toMatchObject({ id: stored!.id, description: 'built \uFFFD by make' });
    const after = await t.coordinator.ctx.repos.workflows.findActiveByAgentAndName(agent.agentId, 'nul');
    expect(after!.updatedAt).toBe(stored!.updatedAt);
  });

  it("does not touch another agent's workflows of the same name", async () => {
    const other = await enrollTestAgent(t.api, t.orgId, { enrollmentToken: await insertEnrollmentToken(t) });
    expect((await other.putWorkflows([workflow('shared')])).status).toBe(200);
    expect((await agent.putWorkflows([workflow('shared')])).status).toBe(200);
    expect((await agent.putWorkflows([])).status).toBe(200);
    const all = await listed();
    expect(all.filter((w) => w.name === 'shared').map((w) => w.agentId)).toEqual([other.agentId]);
  });

  it('refuses a workflow name given twice and keeps the previous set', async () => {
    await agent.putWorkflows([workflow('keep')]);
    const res = await agent.putWorkflows([workflow('x'), workflow('x')]);
    expectError(res, 422, 'validation_failed');
    expect(res.body.details).toEqual([
      { path: 'body.workflows.1.name', message: 'duplicates body.workflows.0.name `x`' },
    ]);
    expect(await names()).toEqual(['keep']);
  });

  it('refuses inconsistent parameter definitions with one detail each', async () => {
    const res = await agent.putWorkflows([
      workflow('w', {
        paramsSchema: [
          { name: 'e', type: 'enum', options: [] },
          { name: 's', type: 'string', pattern: '(' },
          { name: 'n', type: 'number', min: 3, max: 1 },
          { name: 'd', type: 'number', max: 5, default: 6 },
          { name: 'd', type: 'boolean', default: 'yes' as unknown as boolean },
        ],
      }),
    ]);
    expectError(res, 422, 'validation_failed');
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual([
      'body.workflows.0.paramsSchema.0.options',
      'body.workflows.0.paramsSchema.1.pattern',
      'body.workflows.0.paramsSchema.2.min',
      'body.workflows.0.paramsSchema.3.default',
      'body.workflows.0.paramsSchema.4.name',
      'body.workflows.0.paramsSchema.4.default',
    ]);
  });

  it('refuses secret values: only secret names are part of a definition', async () => {
    const res = await agent.request('PUT', '/v1/agent/workflows', {
      workflows: [{ ...workflow('w'), secrets: { DEPLOY_TOKEN: 'hunter2' } }],
    });
    expectError(res, 422, 'validation_failed');
    expect(res.body.details).toContainEqual({ path: 'body.workflows.0.secrets', message: 'is not a known field' });
    expect(res.text).not.toContain('hunter2');
  });

  it('refuses wrong types, missing fields, unknown fields and huge strings', async () => {
    const cases: [unknown, string][] = [
      [{}, 'body.workflows'],
      [{ workflows: 'all' }, 'body.workflows'],
      [{ workflows: [{ name: 'x' }] }, 'body.workflows.0.steps'],
      [{ workflows: [{ ...workflow('x'), steps: [] }] }, 'body.workflows.0.steps'],
      [{ workflows: [{ ...workflow('x'), steps: [{ run: 1 }] }] }, 'body.workflows.0.steps.0.run'],
      [{ workflows: [workflow('bad name')] }, 'body.workflows.0.name'],
      [{ workflows: [workflow('x'.repeat(100_000))] }, 'body.workflows.0.name'],
      [{ workflows: [workflow('x', { description: 'd'.repeat(100_000) })] }, 'body.workflows.0.description'],
      [
        { workflows: [workflow('x', { paramsSchema: [{ name: 'p', type: 'date' as never }] })] },
        'body.workflows.0.paramsSchema.0.type',
      ],
      [
        { workflows: [workflow('x', { paramsSchema: [{ name: 'p', type: 'string', extra: 1 } as never] })] },
        'body.workflows.0.paramsSchema.0.extra',
      ],
      [{ workflows: [], more: 1 }, 'body.more'],
    ];
    for (const [body, pathName] of cases) {
      const res = await agent.request('PUT', '/v1/agent/workflows', body);
      expectError(res, 422, 'validation_failed');
      expect(
        res.body.details.map((d: { path: string }) => d.path),
        pathName,
      ).toContain(pathName);
    }
    for (const rawBody of ['{', 'null', '[]']) {
      const res = await agent.request('PUT', '/v1/agent/workflows', undefined, { rawBody });
      expect(res.status, rawBody).toBe(422);
      expect(res.body.code).toBe('validation_failed');
    }
  });
});
