import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEntries } from '../helpers/audit.js';
import { addUser } from '../helpers/members.js';
import { startRunFixture, type RunFixture } from '../helpers/trigger-runs.js';

/** Trigger-run rules: params against paramsSchema, ref and allowedRefs, debug, workflowName, force. */

const expect422 = (res: { status: number; body: any; text: string }, path: string, message?: RegExp | string) => {
  expect(res.status, res.text).toBe(422);
  expect(res.body).toMatchObject({ statusCode: 422, code: 'validation_failed' });
  const detail = res.body.details.find((d: { path: string }) => d.path === path);
  expect(detail, res.text).toBeDefined();
  if (message !== undefined) expect(detail.message).toMatch(message);
};

describe('trigger-run rules', () => {
  let f: RunFixture;
  let deploy: { id: string };
  let token: string;

  beforeAll(async () => {
    f = await startRunFixture();
    deploy = await f.createTrigger({ workflowName: 'deploy' });
    token = await f.token([deploy.id]);
  });
  afterAll(() => f?.close());

  const paramsOf = async (res: { body: { jobId: string } }) => (await f.job(res.body.jobId)).params;

  describe('params', () => {
    const run = (params: Record<string, unknown>) => f.run(token, deploy.id, { params });

    it('applies defaults and keeps the values sent', async () => {
      const res = await run({ env: 'staging', tag: 'v12', dryRun: false, replicas: 10 });
      expect(res.status, res.text).toBe(202);
      expect(await paramsOf(res)).toEqual({ env: 'staging', tag: 'v12', dryRun: false, replicas: 10 });
      const defaults = await run({ env: 'prod' });
      expect(await paramsOf(defaults)).toEqual({ env: 'prod', replicas: 2 });
    });

    it('refuses a missing required parameter, naming it', async () => {
      expect422(await run({}), 'body.params.env', /required.*`staging`, `prod`/);
      expect422(await f.run(token, deploy.id, {}), 'body.params.env', /required/);
    });

    it('refuses a value that is not an option of an enum', async () => {
      expect422(await run({ env: 'dev' }), 'body.params.env', /one of `staging`, `prod`, got `dev`/);
      expect422(await run({ env: 1 }), 'body.params.env', /one of/);
    });

    it('refuses values of the wrong type, null included', async () => {
      expect422(await run({ env: 'prod', replicas: '3' }), 'body.params.replicas', /must be a number/);
      expect422(await run({ env: 'prod', dryRun: 'yes' }), 'body.params.dryRun', /must be a boolean/);
      expect422(await run({ env: 'prod', tag: 12 }), 'body.params.tag', /must be a string/);
      expect422(await run({ env: 'prod', replicas: null }), 'body.params.replicas', /must be a number, got `null`/);
    });

    it('refuses a string that does not match the pattern', async () => {
      expect422(await run({ env: 'prod', tag: 'latest' }), 'body.params.tag', /pattern `\^v\\d\+\$`/);
    });

    it('refuses numbers below min or above max, and accepts the bounds', async () => {
      expect422(await run({ env: 'prod', replicas: 0 }), 'body.params.replicas', /at least 1/);
      expect422(await run({ env: 'prod', replicas: 11 }), 'body.params.replicas', /at most 10/);
      expect((await run({ env: 'prod', replicas: 1 })).status).toBe(202);
    });

    it('lists every bad parameter at once', async () => {
      const res = await run({ replicas: 99, tag: 'x' });
      expect(res.status).toBe(422);
      expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
        'body.params.env',
        'body.params.replicas',
        'body.params.tag',
      ]);
    });

    it('passes every parameter through when the workflow declares none', async () => {
      const build = await f.createTrigger({ workflowName: 'build' });
      const tok = await f.token([build.id]);
      const params = { anything: ['goes', 1, true, null], nested: { deep: { er: 'x' } } };
      const res = await f.run(tok, build.id, { params });
      expect(res.status, res.text).toBe(202);
      expect(await paramsOf(res)).toEqual(params);
    });
  });

  describe('ref and allowedRefs', () => {
    it('refuses a ref outside allowedRefs with 403, and requires one when the list is set', async () => {
      const trigger = await f.createTrigger({ workflowName: 'build', allowedRefs: ['main', 'v1.0.0'] });
      const tok = await f.token([trigger.id]);
      const res = await f.run(tok, trigger.id, { ref: 'feature/x' });
      expect(res.status, res.text).toBe(403);
      expect(res.body).toMatchObject({ code: 'forbidden', message: expect.stringContaining('feature/x') });
      expect422(await f.run(tok, trigger.id, {}), 'body.ref', /required/);
      const ok = await f.run(tok, trigger.id, { ref: 'v1.0.0' });
      expect(ok.status).toBe(202);
      expect((await f.job(ok.body.jobId)).ref).toBe('v1.0.0');
      expect(await f.jobsOf(trigger.id)).toHaveLength(1);
    });

    it('accepts any ref, or none, when the trigger has no allowedRefs', async () => {
      const build = await f.createTrigger({ workflowName: 'build' });
      const tok = await f.token([build.id]);
      expect((await f.run(tok, build.id, { ref: 'a3f9c2e' })).status).toBe(202);
      expect((await f.run(tok, build.id, {})).status).toBe(202);
    });
  });

  describe('debug', () => {
    it('refuses debug: true with 403 unless the trigger allows debug', async () => {
      const strict = await f.createTrigger({ workflowName: 'build' });
      const lax = await f.createTrigger({ workflowName: 'build', allowDebug: true });
      const tok = await f.token([strict.id, lax.id]);
      const refused = await f.run(tok, strict.id, { debug: true });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('forbidden');
      expect(await f.jobsOf(strict.id)).toHaveLength(0);
      expect((await f.run(tok, strict.id, { debug: false })).status).toBe(202);
      const allowed = await f.run(tok, lax.id, { debug: true });
      expect(allowed.status).toBe(202);
      expect((await f.job(allowed.body.jobId)).debug).toBe(true);
    });
  });

  describe('workflowName', () => {
    let anyWorkflow: { id: string };
    let tok: string;
    beforeAll(async () => {
      anyWorkflow = await f.createTrigger({ scopeType: 'agent', workflowName: null, name: 'any' });
      tok = await f.token([anyWorkflow.id]);
    });

    it('runs the named workflow of the agent for an agent-scoped trigger', async () => {
      const res = await f.run(tok, anyWorkflow.id, { workflowName: 'lint' });
      expect(res.status, res.text).toBe(202);
      expect(await f.job(res.body.jobId)).toMatchObject({
        workflowName: 'lint',
        workflowId: await f.workflowId('lint'),
      });
      const deployRun = await f.run(tok, anyWorkflow.id, { workflowName: 'deploy', params: { env: 'prod' } });
      expect(await paramsOf(deployRun)).toEqual({ env: 'prod', replicas: 2 });
    });

    it('requires workflowName for an agent-scoped trigger (422)', async () => {
      expect422(await f.run(tok, anyWorkflow.id, {}), 'body.workflowName', /required/);
      expect422(await f.run(tok, anyWorkflow.id, { workflowName: '' }), 'body.workflowName');
      expect422(await f.run(tok, anyWorkflow.id, { workflowName: '../etc' }), 'body.workflowName');
    });

    it('answers 404 for a workflow the agent does not report', async () => {
      const res = await f.run(tok, anyWorkflow.id, { workflowName: 'nope' });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'not_found', message: expect.stringContaining('nope') });
    });

    it('ignores workflowName for a workflow-scoped trigger', async () => {
      const res = await f.run(token, deploy.id, { workflowName: 'lint', params: { env: 'prod' } });
      expect(res.status).toBe(202);
      expect((await f.job(res.body.jobId)).workflowName).toBe('deploy');
    });

    it("answers 404 when the trigger's workflow is not reported, or no longer", async () => {
      const later = await f.createTrigger({ workflowName: 'not-yet' });
      const tok2 = await f.token([later.id]);
      expect((await f.run(tok2, later.id)).status).toBe(404);
      const lintOnly = await f.createTrigger({ workflowName: 'lint' });
      const tok3 = await f.token([lintOnly.id]);
      expect((await f.run(tok3, lintOnly.id)).status).toBe(202);
      const { WORKFLOWS } = await import('../helpers/trigger-runs.js');
      await f.putWorkflows(
        f.agent,
        WORKFLOWS.filter((w) => w.name !== 'lint'),
      );
      try {
        expect((await f.run(tok3, lintOnly.id)).status).toBe(404);
        expect((await f.run(tok, anyWorkflow.id, { workflowName: 'lint' })).status).toBe(404);
      } finally {
        await f.putWorkflows(f.agent, WORKFLOWS);
      }
      expect((await f.run(tok3, lintOnly.id)).status).toBe(202);
    });
  });

  describe('force', () => {
    let limited: { id: string };
    let ownerToken: string;
    let member: { userId: string; token: string };

    beforeAll(async () => {
      limited = await f.createTrigger({ workflowName: 'lint', name: 'forced' });
      ownerToken = await f.token([limited.id]);
      const user = await addUser(await f.owner(), f.t.orgId, 'force-member@example.test');
      member = { userId: user.userId, token: await f.token([limited.id], {}, user.client) };
    });

    it("refuses a member's token with 403, and accepts it once the member is an owner", async () => {
      const res = await f.run(member.token, limited.id, { force: true, forceReason: 'hotfix' });
      expect(res.status, res.text).toBe(403);
      expect(res.body.code).toBe('forbidden');
      expect(await f.jobsOf(limited.id)).toHaveLength(0);
      // Ordinary runs are allowed to members.
      expect((await f.run(member.token, limited.id, {})).status).toBe(202);
      const owner = await f.owner();
      const promote = await owner.patch(`/orgs/${f.t.orgId}/members/${member.userId}`, { body: { role: 'owner' } });
      expect(promote.status).toBe(200);
      try {
        expect((await f.run(member.token, limited.id, { force: true, forceReason: 'hotfix' })).status).toBe(202);
      } finally {
        await owner.patch(`/orgs/${f.t.orgId}/members/${member.userId}`, { body: { role: 'member' } });
      }
      expect((await f.run(member.token, limited.id, { force: true, forceReason: 'hotfix' })).status).toBe(403);
    });

    it('requires a non-empty forceReason with the spec message', async () => {
      for (const body of [{ force: true }, { force: true, forceReason: '' }, { force: true, forceReason: '   ' }]) {
        const res = await f.run(ownerToken, limited.id, body);
        expect422(res, 'body.forceReason', 'forceReason is required when force=true');
        expect(res.body.message).toBe('forceReason is required when force=true');
      }
      // Shown in tables, chat messages and the audit log: no control characters (a NUL was stored
      // on SQLite and refused by PostgreSQL as "cannot be stored").
      for (const forceReason of ['a\u0000b', 'red\u001b[31m', 'two\nlines']) {
        const res = await f.run(ownerToken, limited.id, { force: true, forceReason });
        expect422(res, 'body.forceReason', 'must not contain control characters');
      }
    });

    it('ignores forceReason without force: nothing is forced, nothing is kept', async () => {
      for (const body of [{ forceReason: 'why' }, { force: false, forceReason: 'why' }]) {
        const res = await f.run(ownerToken, limited.id, body);
        expect([202, 429], res.text).toContain(res.status);
        expect((await f.jobsOf(limited.id)).at(-1)).toMatchObject({ forced: false, forceReason: null });
      }
    });

    it('stores forced and forceReason on the job and writes trigger.force_run', async () => {
      const res = await f.run(ownerToken, limited.id, { force: true, forceReason: '  incident 42  ' });
      expect(res.status, res.text).toBe(202);
      expect(await f.job(res.body.jobId)).toMatchObject({
        forced: true,
        forceReason: 'incident 42',
        status: 'pending',
      });
      const entries = await auditEntries(await f.owner(), f.t.orgId, 'trigger.force_run');
      const entry = entries.find((e) => e.metadata.jobId === res.body.jobId);
      expect(entry).toMatchObject({
        actorType: 'api_token',
        targetType: 'trigger',
        targetId: limited.id,
        metadata: { forceReason: 'incident 42', jobId: res.body.jobId, workflowName: 'lint' },
      });
    });
  });
});
