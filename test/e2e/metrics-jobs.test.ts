import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemonRig, type AgentStateDir, type DaemonRig } from '../helpers/agent-daemon.js';
import { runAgentCli } from '../helpers/agent-cli.js';
import { makeTempDir, type TestCoordinator } from '../helpers/coordinator.js';
import { PROMTOOL, promtoolCheck, Scrape, scrape } from '../helpers/metrics.js';
import { eventually } from '../helpers/poll.js';
import { defaultBindingId, uploadFile } from '../helpers/storage.js';
import { issueApiToken } from '../helpers/tokens.js';

/**
 * The figures move as real jobs run (docs/metrics.md): a real coordinator with metrics on, a real
 * `drover-agent run` with `--metrics-file`, real workflow files. Every value is read from a scrape
 * of `/metrics` (or the agent's textfile) parsed by a Prometheus text-format parser, before and
 * after, and compared by difference.
 */

const TOKEN = 'metrics-token-for-the-job-tests';
const SIZE = 300_000;

let rig: DaemonRig | undefined;
let t: TestCoordinator;
let a: AgentStateDir;
let textfiles: string;
const metricsFile = () => path.join(textfiles, 'drover-agent.prom');
const triggers = new Map<string, { id: string; token: string }>();

afterAll(async () => {
  await rig?.close();
  if (textfiles) fs.rmSync(textfiles, { recursive: true, force: true });
});

beforeAll(async () => {
  textfiles = makeTempDir('drover-textfile-');
  rig = await startDaemonRig({
    workPrefix: 'drover-metrics-',
    env: { DROVER_METRICS_TOKEN: TOKEN },
    daemonArgs: ['--metrics-file', path.join(textfiles, 'drover-agent.prom')],
    workflows: () => ({
      ok: ['name: ok', 'steps:', '  - run: echo fine', '    shell: true'],
      fail: ['name: fail', 'steps:', '  - run: echo broken; exit 3', '    shell: true'],
      copy: [
        'name: copy',
        'params:',
        '  - {name: input, type: file, required: true}',
        'steps:',
        '  - run: cp "$DROVER_PARAM_INPUT" out.bin && echo "copy=file:out.bin" >> "$DROVER_OUTPUT"',
        '    shell: true',
      ],
    }),
  });
  ({ t, a } = rig);
  const bindingId = await defaultBindingId(t);
  for (const name of ['ok', 'fail', 'copy']) {
    const res = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
      body: {
        name,
        agentId: a.agentId,
        scopeType: 'workflow',
        workflowName: name,
        responseMode: 'sync',
        responseTimeoutMs: 30_000,
      },
    });
    expect(res.status, res.text).toBe(201);
    const { token } = await issueApiToken(t.owner, t.orgId, [
      { type: 'trigger', triggerIds: [res.body.id] },
      { type: 'storage', bindingIds: [bindingId], permissions: ['read', 'write'] },
    ]);
    triggers.set(name, { id: res.body.id, token });
  }
}, 60_000);

const metrics = () => scrape(`${t.url}/metrics`, TOKEN);

async function run(
  name: string,
  body: Record<string, unknown> = {},
  options: { token?: string; headers?: Record<string, string> } = {},
) {
  const tr = triggers.get(name)!;
  const res = await t.api.post(`/triggers/${tr.id}/run`, {
    token: options.token ?? tr.token,
    body,
    ...(options.headers ? { headers: options.headers } : {}),
  });
  if (typeof res.body?.jobId === 'string') rig!.jobIds.push(res.body.jobId);
  return res;
}

/** `after - before` of a counter or gauge. */
const moved = (before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}) =>
  after.value(name, labels) - before.value(name, labels);
const movedCount = (before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}) =>
  after.histogram(name, labels).count - before.histogram(name, labels).count;

describe('with a real agent running real jobs', () => {
  it('counts the jobs, their waits and runs, the dispatch, replays, limits, bytes and commits', async () => {
    await eventually(async () => (await metrics()).value('drover_agents_connected') === 1, 15_000, 'the stream');
    const before = await metrics();

    expect((await run('ok')).body).toMatchObject({ status: 'success' });
    expect((await run('fail')).body).toMatchObject({ status: 'failed', exitCode: 3 });
    const data = Buffer.alloc(SIZE, 7);
    const storage = t.api.withToken(triggers.get('copy')!.token);
    const { fileId } = await uploadFile(storage, data, { cleanupRule: 'ttl', ttlSeconds: 3600 });
    const copied = await run('copy', { params: { input: { __type: 'FileRef', id: fileId } } });
    expect(copied.body).toMatchObject({ status: 'success', output: { copy: { __type: 'FileRef' } } });

    // The same Idempotency-Key twice: one job, one replay.
    const key = { 'idempotency-key': `metrics-${Date.now()}` };
    expect((await run('ok', {}, { headers: key })).status).toBe(200);
    const replay = await run('ok', {}, { headers: key });
    expect(replay.body).toMatchObject({ idempotent: true });

    // A token allowed one run a minute: the second is refused, and stored `rejected`.
    const limited = await issueApiToken(t.owner, t.orgId, [{ type: 'trigger', triggerIds: [triggers.get('ok')!.id] }], {
      rateLimitPerMinute: 1,
    });
    expect((await run('ok', {}, { token: limited.token })).status).toBe(200);
    expect((await run('ok', {}, { token: limited.token })).status).toBe(429);

    // An application bound to the agent, never reported on.
    const app = await t.owner.post(`/orgs/${t.orgId}/apps`, { body: { slug: 'gateway', updateWorkflowName: 'ok' } });
    expect(app.status, app.text).toBe(201);
    const bound = await t.owner.post(`/orgs/${t.orgId}/apps/${app.body.id}/devices`, {
      body: { agentIds: [a.agentId] },
    });
    expect(bound.status, bound.text).toBe(201);

    // A sync answer comes once the job ended; its figures follow its commit.
    const after = await eventually(
      async () => {
        const s = await metrics();
        return moved(before, s, 'drover_jobs_finished_total') === 6 ? s : undefined;
      },
      15_000,
      'six jobs counted as finished',
    );
    // ok, fail, copy, the first idempotent call, the limited token's two calls (one refused).
    expect(moved(before, after, 'drover_jobs_created_total', { source: 'webhook' })).toBe(6);
    expect(moved(before, after, 'drover_jobs_created_total')).toBe(6);
    expect(moved(before, after, 'drover_jobs_finished_total', { status: 'success' })).toBe(4);
    expect(moved(before, after, 'drover_jobs_finished_total', { status: 'failed' })).toBe(1);
    expect(moved(before, after, 'drover_jobs_finished_total', { status: 'rejected' })).toBe(1);
    // The five jobs that ran: each waited, ran, and was pushed to the open stream.
    expect(movedCount(before, after, 'drover_job_queue_wait_seconds')).toBe(5);
    expect(movedCount(before, after, 'drover_job_run_seconds')).toBe(5);
    expect(movedCount(before, after, 'drover_dispatch_latency_seconds')).toBe(5);
    const dispatch = after.histogram('drover_dispatch_latency_seconds');
    expect(dispatch.sum / dispatch.count).toBeLessThan(1);
    expect(moved(before, after, 'drover_idempotent_replays_total')).toBe(1);
    expect(moved(before, after, 'drover_rate_limit_blocks_total', { kind: 'token' })).toBe(1);
    expect(moved(before, after, 'drover_rate_limit_blocks_total', { kind: 'workflow' })).toBe(0);
    // The test's upload and the agent's output upload in; the agent's input download out.
    expect(moved(before, after, 'drover_storage_bytes_total', { direction: 'upload' })).toBe(2 * SIZE);
    expect(moved(before, after, 'drover_storage_bytes_total', { direction: 'download' })).toBe(SIZE);
    expect(after.value('drover_ota_devices', { state: 'unreported' })).toBe(1);
    expect(after.value('drover_agents_connected')).toBe(1);
    const seen = after.samples('drover_agent_last_seen_timestamp_seconds', { agent_id: a.agentId });
    expect(seen.map((m) => m.labels.agent)).toEqual(['daemon-test']);
    expect(
      Date.now() / 1000 - after.value('drover_agent_last_seen_timestamp_seconds', { agent_id: a.agentId }),
    ).toBeLessThan(60);
    expect(movedCount(before, after, 'drover_db_commit_seconds')).toBeGreaterThan(0);
    const runRoute = { route: '/v1/triggers/:id/run', method: 'POST' };
    expect(moved(before, after, 'drover_http_requests_total', { ...runRoute, status: '200' })).toBe(6);
    expect(moved(before, after, 'drover_http_requests_total', { ...runRoute, status: '429' })).toBe(1);
    // The blob routes write their answers themselves; they count when they end.
    const blobs = { route: '/v1/storage/blobs/:fileId', status: '200' };
    expect(moved(before, after, 'drover_http_requests_total', { ...blobs, method: 'PUT' })).toBe(2);
    expect(moved(before, after, 'drover_http_requests_total', { ...blobs, method: 'GET' })).toBe(1);
    // The agent's reports are requests too (a report sent again after a lost answer counts again).
    expect(
      moved(before, after, 'drover_http_requests_total', { route: '/v1/agent/jobs/:jobId/finish', status: '200' }),
    ).toBeGreaterThanOrEqual(5);
  });

  it("keeps the agent's own counters, shown by status and written for node_exporter", async () => {
    // After the test above: five jobs ran on the agent (one failed), none refused, no reconnect.
    const expected = { jobsRun: 5, jobsFailed: 1, jobsRejected: 0, reconnects: 0 };
    const status = await eventually(
      async () => {
        const res = await runAgentCli(['status', '--state-dir', a.stateDir, '--json']);
        const counters = JSON.parse(res.stdout).counters;
        return counters?.jobsRun === 5 ? counters : undefined;
      },
      15_000,
      'the agent to count five jobs',
    );
    expect(status).toMatchObject({ ...expected, bytesDownloaded: SIZE, bytesUploaded: SIZE });
    const text = await runAgentCli(['status', '--state-dir', a.stateDir]);
    expect(text.stdout).toMatch(/Jobs: +5 run \(1 failed\), 0 rejected, since /);
    expect(text.stdout).toMatch(/Files moved: +300 KB downloaded, 300 KB uploaded/);

    const file = await eventually(
      async () => {
        const s = await Scrape.parse(fs.readFileSync(metricsFile(), 'utf8'));
        return s.value('drover_agent_jobs_run_total') === 5 ? s : undefined;
      },
      15_000,
      'the metrics file to count five jobs',
    );
    expect(file.value('drover_agent_jobs_failed_total')).toBe(1);
    expect(file.value('drover_agent_jobs_rejected_total')).toBe(0);
    expect(file.value('drover_agent_stream_reconnects_total')).toBe(0);
    expect(file.value('drover_agent_transfer_bytes_total', { direction: 'download' })).toBe(SIZE);
    expect(file.value('drover_agent_transfer_bytes_total', { direction: 'upload' })).toBe(SIZE);
    expect(file.value('drover_agent_counters_since_seconds')).toBeGreaterThan(0);
    expect(fs.readdirSync(textfiles)).toEqual(['drover-agent.prom']);
    if (PROMTOOL) expect(await promtoolCheck(fs.readFileSync(metricsFile(), 'utf8'))).toEqual({ code: 0, out: '' });
  });

  it('counts a reconnect of the stream on the agent, and the stream open again on the coordinator', async () => {
    // Every connection the coordinator holds is cut, the agent's stream among them.
    t.coordinator.app.server.closeAllConnections();
    await eventually(
      async () => {
        const res = await runAgentCli(['status', '--state-dir', a.stateDir, '--json']);
        return JSON.parse(res.stdout).counters?.reconnects === 1;
      },
      20_000,
      'the agent to count its reconnect',
    );
    await eventually(async () => (await metrics()).value('drover_agents_connected') === 1, 15_000, 'the stream');
    const file = await Scrape.parse(fs.readFileSync(metricsFile(), 'utf8'));
    expect(file.value('drover_agent_stream_reconnects_total')).toBe(1);
  });
});
