import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, loadConfig, startServer, type RunningServer } from '@drover/coordinator';
import { coordinatorCli, killLeftoverCoordinators } from '../helpers/coordinator-cli.js';
import { makeTempDir, startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import { getMetrics, PROMTOOL, promtoolCheck, scrape } from '../helpers/metrics.js';

/**
 * `GET /metrics` (docs/metrics.md): off by default, behind DROVER_METRICS_TOKEN on the API's
 * address, and without credentials on the `--metrics-listen` address. Real servers on loopback,
 * scrapes parsed by a Prometheus text-format parser.
 */

const TOKEN = 'metrics-token-0123456789abcdef';

describe('without DROVER_METRICS_TOKEN', () => {
  let t: TestCoordinator | undefined;
  afterAll(() => t?.close());

  it('has no /metrics route and measures nothing', async () => {
    t = await startTestCoordinator();
    const res = await getMetrics(`${t.url}/metrics`, TOKEN);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text)).toEqual({
      statusCode: 404,
      code: 'not_found',
      message: 'Route GET /metrics not found',
    });
    expect(t.coordinator.metrics).toBeNull();
  });
});

describe('with DROVER_METRICS_TOKEN', () => {
  let t: TestCoordinator | undefined;
  beforeAll(async () => {
    t = await startTestCoordinator({ env: { DROVER_METRICS_TOKEN: TOKEN } });
  });
  afterAll(() => t?.close());
  const url = () => `${t!.url}/metrics`;

  it('answers 401 in the error body without a token, with a wrong one, and with another scheme', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789abcdef', `Basic ${TOKEN}`, 'Bearer']) {
      const res = await fetch(url(), { headers: authorization ? { authorization } : {} });
      expect(res.status, String(authorization)).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="drover"');
      expect(await res.json()).toEqual({ statusCode: 401, code: 'unauthorized', message: expect.any(String) });
    }
  });

  it("serves the Prometheus text with the token: Drover's series and the process's", async () => {
    const s = await scrape(url(), TOKEN);
    for (const name of [
      'drover_http_requests_total',
      'drover_http_request_duration_seconds',
      'drover_jobs_created_total',
      'drover_jobs_finished_total',
      'drover_job_queue_wait_seconds',
      'drover_job_run_seconds',
      'drover_dispatch_latency_seconds',
      'drover_agents_connected',
      'drover_agent_last_seen_timestamp_seconds',
      'drover_rate_limit_blocks_total',
      'drover_idempotent_replays_total',
      'drover_storage_bytes_total',
      'drover_ota_devices',
      'drover_db_commit_seconds',
      'drover_db_commit_batch_size',
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(s.has(name), name).toBe(true);
    }
    // Known label sets exist from the start, at 0.
    expect(s.samples('drover_jobs_created_total').map((m) => m.labels.source)).toEqual(
      expect.arrayContaining(['webhook', 'cron', 'manual', 'slack', 'discord', 'ota']),
    );
    expect(s.value('drover_jobs_finished_total', { status: 'success' })).toBe(0);
    expect(s.value('drover_agents_connected')).toBe(0);
    expect(s.value('drover_ota_devices', { state: 'unreported' })).toBe(0);
    // An enrollment token's audit entry goes through the group commit.
    expect((await t!.owner.post(`/orgs/${t!.orgId}/enrollment-tokens`, { body: {} })).status).toBe(201);
    const commits = (await scrape(url(), TOKEN)).histogram('drover_db_commit_batch_size');
    expect(commits.count).toBeGreaterThan(0);
    expect(commits.sum).toBeGreaterThanOrEqual(commits.count);
  });

  it.runIf(PROMTOOL)("passes Prometheus's own check (promtool check metrics) for every Drover series", async () => {
    const { text } = await scrape(url(), TOKEN);
    // prom-client's default series break a naming lint of promtool's (gauges named *_total): only Drover's are judged.
    const drover = text
      .split('\n')
      .filter((line) => /^(# (HELP|TYPE) )?drover_/.test(line))
      .join('\n');
    expect(await promtoolCheck(`${drover}\n`)).toEqual({ code: 0, out: '' });
  });

  it('labels requests with the route pattern, never the URL, and unmatched routes with one value', async () => {
    const before = await scrape(url(), TOKEN);
    const agentsRoute = { route: '/v1/orgs/:orgId/agents', method: 'GET', status: '200' };
    const unmatched = { route: 'unmatched', method: 'GET', status: '404' };
    expect((await t!.owner.get(`/orgs/${t!.orgId}/agents`)).status).toBe(200);
    expect((await t!.owner.get(`/orgs/${t!.orgId}/agents`)).status).toBe(200);
    for (const path of ['/no/such/thing', '/v1/nothing-here?x=1']) {
      expect((await fetch(`${t!.url}${path}`)).status).toBe(404);
    }
    const after = await scrape(url(), TOKEN);
    expect(
      after.value('drover_http_requests_total', agentsRoute) - before.value('drover_http_requests_total', agentsRoute),
    ).toBe(2);
    expect(
      after.value('drover_http_requests_total', unmatched) - before.value('drover_http_requests_total', unmatched),
    ).toBe(2);
    const durations = after.histogram('drover_http_request_duration_seconds', { route: '/v1/orgs/:orgId/agents' });
    expect(durations.count).toBeGreaterThanOrEqual(2);
    expect(durations.sum).toBeGreaterThan(0);
    // The scrapes themselves are requests of the /metrics route (401s included).
    expect(after.value('drover_http_requests_total', { route: '/metrics', status: '200' })).toBeGreaterThanOrEqual(2);
    const routes = new Set(after.samples('drover_http_requests_total').map((m) => m.labels.route));
    for (const route of routes) {
      expect(route, 'a raw id in a route label').not.toContain(t!.orgId);
      expect(route).not.toMatch(/no\/such|nothing-here|\?/);
    }
  });

  it('counts sign-ins refused by the throttle as rate-limit blocks of kind sign_in', async () => {
    const before = (await scrape(url(), TOKEN)).value('drover_rate_limit_blocks_total', { kind: 'sign_in' });
    let refused = 0;
    for (let i = 0; i < 7; i++) {
      const res = await t!.api.post('/auth/login', {
        body: { email: 'nobody@example.test', password: 'wrong password' },
        token: null,
      });
      if (res.status === 429) refused += 1;
    }
    expect(refused).toBeGreaterThan(0);
    const after = (await scrape(url(), TOKEN)).value('drover_rate_limit_blocks_total', { kind: 'sign_in' });
    expect(after - before).toBe(refused);
  });
});

describe('--metrics-listen', () => {
  let server: RunningServer | undefined;
  afterAll(() => server?.stop());

  it('serves /metrics without credentials on its own address, and nothing else there', async () => {
    const config = loadConfig(
      {},
      { port: '0', host: '127.0.0.1', dataDir: makeTempDir(), logLevel: 'silent', metricsListen: '127.0.0.1:0' },
    );
    server = await startServer(config, createLogger('silent'));
    expect(server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.metricsUrl).not.toBe(server.url);

    const s = await scrape(`${server.metricsUrl}/metrics`);
    expect(s.value('drover_agents_connected')).toBe(0);
    expect(s.has('process_cpu_user_seconds_total')).toBe(true);

    // No token set: the API's address has no /metrics.
    expect((await getMetrics(`${server.url}/metrics`)).status).toBe(404);
    const other = await getMetrics(`${server.metricsUrl}/v1/orgs`);
    expect(other.status).toBe(404);
    expect(JSON.parse(other.text)).toMatchObject({ statusCode: 404, code: 'not_found' });
    const post = await fetch(`${server.metricsUrl}/metrics`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(await post.json()).toMatchObject({ statusCode: 405, code: 'method_not_allowed' });

    await server.stop();
    await expect(fetch(`${server.metricsUrl}/metrics`)).rejects.toThrow();
  });
});

describe('drover-coordinator start with metrics settings', () => {
  afterEach(() => {
    expect(killLeftoverCoordinators(), 'child processes left running').toEqual([]);
  });

  async function start(args: string[], env: Record<string, string> = {}) {
    const c = coordinatorCli(['start', '--port', '0', ...args], env);
    const code = await c.exited;
    return { code, stdout: c.stdout(), stderr: c.stderr() };
  }

  it('exits 2 naming the setting when the token or the listen address is bad', async () => {
    const res = await start(['--data-dir', makeTempDir(), '--metrics-listen', 'nowhere'], {
      DROVER_METRICS_TOKEN: 'short',
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toBe(
      [
        'drover-coordinator: Invalid configuration:',
        '  - DROVER_METRICS_TOKEN: expected 16 to 1024 characters, got 5',
        '  - --metrics-listen: expected host:port (an IPv6 address in brackets: [::1]:9464), got `nowhere`',
        '',
      ].join('\n'),
    );
  });

  it('exits 1 in one line, creating nothing, when the metrics address is taken', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as net.AddressInfo;
      const dataDir = path.join(makeTempDir(), 'data');
      const res = await start(['--data-dir', dataDir, '--metrics-listen', `127.0.0.1:${port}`]);
      expect(res.code).toBe(1);
      expect(res.stderr).toBe(
        `drover-coordinator: port ${port} on 127.0.0.1 is in use by another program (--metrics-listen, DROVER_METRICS_LISTEN)\n`,
      );
      expect(fs.existsSync(dataDir)).toBe(false);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
