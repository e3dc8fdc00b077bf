import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow } from '../helpers/agent.js';
import { CHROMIUM, launchBrowser, openPage, screenshotOnFailure, signIn, type TestPage } from '../helpers/browser.js';
import { OWNER_EMAIL, OWNER_PASSWORD, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { createTestJob } from '../helpers/jobs.js';
import { artifactUploader, bindDevices, createApp, createRelease, uploadArtifact } from '../helpers/ota.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * Every page of the dashboard drawn over the sparsest objects the API answers: each field its
 * response schemas let be null or absent is null or absent somewhere below (a workflow without
 * params, description or version, agents that never connected, a revoked one, triggers without
 * any optional setting, a trigger on a selector without maxParallel and its batch (a job
 * rejected), jobs without output, exit code, trigger or workflow, an application
 * without releases, a release without notes, a device that never reported, a pending file
 * without a name, a token without grants, limits or expiry). No page may fall into the router's
 * error screen, and each shows what it is about. One coordinator, one browser.
 */

const ERROR_SCREEN = 'Unexpected Application Error';

describe.skipIf(!CHROMIUM)('the dashboard over the sparsest objects the API answers', () => {
  let t: TestCoordinator;
  let browser: Browser;
  let owner: TestPage;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestCoordinator();
    const { owner: api, orgId } = t;
    // An agent that reported the docs' `apply-update` shape: no params, no description, no version.
    const edge = await enrollTestAgent(api, orgId, { hostname: 'edge-sparse' });
    const reported = await edge.putWorkflows([
      workflow('apply-update', { description: null, version: null, paramsSchema: null }),
      workflow('greet', {
        paramsSchema: [{ name: 'who', type: 'string' }],
      }),
    ]);
    expect(reported.status, reported.text).toBe(200);
    ids.agent = edge.agentId;
    // Enrolled and never heard from again, and one revoked.
    await enrollTestAgent(api, orgId, { hostname: 'never-connected' });
    const revoked = await enrollTestAgent(api, orgId, { hostname: 'gone' });
    expect((await api.delete(`/orgs/${orgId}/agents/${revoked.agentId}`)).status).toBe(200);
    ids.revoked = revoked.agentId;

    const trigger = async (body: Record<string, unknown>) => {
      const res = await api.post<{ id: string }>(`/orgs/${orgId}/triggers`, {
        body: { agentId: edge.agentId, ...body },
      });
      expect(res.status, res.text).toBe(201);
      return res.body.id;
    };
    // Every optional field left out: no workflow (any of the agent's), no refs, no notification;
    // a cron trigger has no answer settings at all.
    ids.webhook = await trigger({ name: 'any-workflow', scopeType: 'agent', responseMode: 'async' });
    ids.cron = await trigger({
      name: 'nightly',
      type: 'cron',
      scopeType: 'workflow',
      workflowName: 'apply-update',
      cronExpression: '0 3 * * *',
    });
    ids.chat = await trigger({
      name: 'chat-deploy',
      type: 'slack',
      scopeType: 'workflow',
      workflowName: 'apply-update',
      responseMode: 'async',
      chatTeamId: 'T0SPARSE',
      chatChannelId: 'C0SPARSE',
      chatKeyword: 'deploy',
    });

    // A trigger on a selector without maxParallel, run into a batch: a job waiting on the agent that
    // has the workflow, a rejected one on the agent that never reported any.
    ids.selector = await trigger({
      agentId: null,
      agentSelector: '!role',
      fanout: 'all',
      name: 'fleet-wide',
      scopeType: 'workflow',
      workflowName: 'apply-update',
      responseMode: 'async',
    });
    const batch = await api.post<{ batchId: string }>(`/orgs/${orgId}/triggers/${ids.selector}/run`);
    expect(batch.status, batch.text).toBe(202);
    ids.batch = batch.body.batchId;

    // Jobs with no output, exit code, ref, workflow id or times; one of no trigger (an update).
    const sparseJob = { workflowId: null, ref: null, params: {}, timeoutMs: null };
    ids.pendingJob = (await createTestJob(t, edge, { ...sparseJob, triggerId: ids.webhook })).id;
    ids.rejectedJob = (
      await createTestJob(t, edge, { ...sparseJob, triggerId: ids.cron, source: 'cron', status: 'rejected' })
    ).id;
    ids.updateJob = (
      await createTestJob(t, edge, { ...sparseJob, kind: 'update', source: 'ota', triggerId: null }, { notify: false })
    ).id;

    // An application without releases; another with a draft release without notes, bound to an
    // agent that never reported.
    ids.bareApp = (await createApp(api, orgId, { slug: 'bare' })).id;
    const app = await createApp(api, orgId, { slug: 'kiosk' });
    ids.app = app.id;
    const uploader = await artifactUploader(t);
    const artifact = await uploadArtifact(uploader, 'artifact bytes');
    await createRelease(api, orgId, app.id, { version: '1.0.0', artifactFileId: artifact, notes: null });
    await bindDevices(api, orgId, app.id, [edge.agentId]);
    // A file whose upload never completed, sent without a name or a type.
    const pending = await uploader.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } });
    expect(pending.status, pending.text).toBe(201);

    // A token without grants, limits or expiry.
    await issueApiToken(api, orgId, [], { name: 'bare' });

    browser = await launchBrowser();
    owner = await openPage(browser, t.url);
    await signIn(owner.page, OWNER_EMAIL, OWNER_PASSWORD, t.orgId);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  screenshotOnFailure(() => [owner?.page]);

  const page = (): Page => owner.page;

  /** Opens `path`, waits for its `heading`, then for each of `content` (texts the page must show). */
  async function visit(path: string, heading: string | RegExp, content: (string | RegExp)[] = []) {
    await page().goto(path);
    const shown = async (what: string, locator: ReturnType<Page['getByText']>) => {
      const found = await locator
        .filter({ visible: true })
        .first()
        .waitFor({ timeout: 5_000 })
        .then(() => true)
        .catch(() => false);
      const fell = await page().getByText(ERROR_SCREEN).count();
      expect(fell, `${path} fell into the error screen`).toBe(0);
      expect(found, `${path} shows ${what}`).toBe(true);
    };
    await shown(`the heading ${heading}`, page().getByRole('heading', { name: heading, level: 1 }));
    for (const text of content) await shown(String(text), page().getByText(text));
  }

  it('draws every page of the organization', async () => {
    const org = `/orgs/${t.orgId}`;
    await visit(org, 'acme', ['agent']);
    await visit(`${org}/agents`, 'Agents', ['apply-update', 'greet', 'who: string', 'never-connected']);
    await expect
      .poll(() =>
        page()
          .getByRole('button', { name: /^Revoke / })
          .count(),
      )
      .toBe(2);
    // An agent that reported no labels and has none of operators, and one revoked (no Edit labels).
    await visit(`${org}/agents/${ids.agent}`, 'edge-sparse', ['never seen', 'none reported', 'none set']);
    await visit(`${org}/agents/${ids.revoked}`, 'gone', ['revoked']);
    expect(await page().getByRole('button', { name: 'Edit labels' }).count()).toBe(0);
    await visit(`${org}/triggers`, 'Triggers', ['any-workflow', 'nightly', 'chat-deploy']);
    await visit(`${org}/triggers/new`, 'New trigger');
    await visit(`${org}/jobs`, 'Jobs', ['rejected']);
    await visit(`${org}/batches`, 'Batches', ['!role', '1 pending']);
    await visit(`${org}/batches?triggerId=${ids.selector}`, 'Batches', [
      'Only the batches of fleet-wide.',
      '1 pending',
    ]);
    await visit(`${org}/jobs?batchId=${ids.batch}`, 'Jobs', ['Only the jobs of batch #1.']);
    await visit(`${org}/apps`, 'Updates', ['bare', 'kiosk']);
    await visit(`${org}/apps/${ids.bareApp}`, 'bare', [/no release/i]);
    await visit(`${org}/apps/${ids.app}`, 'kiosk', ['1.0.0', 'edge-sparse']);
    await visit(`${org}/storage`, 'Storage', ['default']);
    await visit(`${org}/integrations`, 'Integrations');
    await visit(`${org}/api-tokens`, 'API tokens', ['bare']);
    await visit(`${org}/members`, 'Members', [OWNER_EMAIL]);
    await visit(`${org}/audit`, 'Audit log', ['trigger.create']);
    expect(owner.problems).toEqual([]);
  });

  it('draws each trigger, its form, and each job', async () => {
    const org = `/orgs/${t.orgId}`;
    for (const [id, name] of [
      [ids.webhook, 'any-workflow'],
      [ids.cron, 'nightly'],
      [ids.chat, 'chat-deploy'],
      [ids.selector, 'fleet-wide'],
    ] as const) {
      await visit(
        `${org}/triggers/${id}`,
        name,
        id === ids.selector ? ['Recent batches', '#1 apply-update'] : ['Recent jobs'],
      );
      await visit(`${org}/triggers/${id}/edit`, `Edit ${name}`);
    }
    await visit(`/api/jobs/${ids.pendingJob}`, /^Job #\d+ deploy/, ['pending']);
    await visit(`/api/jobs/${ids.rejectedJob}`, /^Job #\d+ deploy/, ['rejected']);
    await visit(`/api/jobs/${ids.updateJob}`, /^Job #\d+ deploy/);
    await visit(`/api/batches/${ids.batch}`, /^Batch #1 apply-update/, [
      'edge-sparse',
      'Agent never-connected does not report the workflow `apply-update`',
    ]);
    expect(owner.problems).toEqual([]);
  });
});
