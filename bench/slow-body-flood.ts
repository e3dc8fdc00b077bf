/**
 * Benchmark: a flood of half-sent request bodies. Goal: while 20,000 connections each announce a
 * 1000-byte body and send 10 bytes of it, the API keeps answering (p99 of a discovery GET from
 * another client < 50 ms), every flood connection is closed within the request timeout
 * (`DROVER_REQUEST_TIMEOUT_MS`, plus the sweep's quarter), and the coordinator's memory returns
 * to its level afterwards.
 *
 *   pnpm build && pnpm bench bench/slow-body-flood.ts [--count 20000] [--addresses 1]
 *                                                     [--timeout-ms 30000]
 *
 * The coordinator is the real `drover-coordinator start` in a child process with its default
 * limits (1024 connections per client address) unless `--timeout-ms` is given. The flood comes
 * from another child process (bench/lib/half-sent-flood.ts), from `--addresses` loopback source
 * addresses; this process signs in, issues a token and sends one `GET /v1/agents` every 10 ms
 * over a kept-alive connection from 127.0.0.1 while the flood lasts.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { CHILD_OWNER, memoryMb, startChildCoordinator } from './lib/child-coordinator.js';
import { formatLatency, summarize } from './lib/latency.js';
import { machineNote } from './lib/report.js';

const P99_GOAL_MS = 50;

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '20000' },
    addresses: { type: 'string', default: '1' },
    'timeout-ms': { type: 'string' },
  },
});
const count = Number(values.count);
const timeoutMs = values['timeout-ms'] ? Number(values['timeout-ms']) : 30_000;

console.log(`slow-body flood: ${count} half-sent bodies from ${values.addresses} address(es); ${machineNote()}`);
const coordinator = await startChildCoordinator({
  env: {
    API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: '1000000000',
    ...(values['timeout-ms'] ? { DROVER_REQUEST_TIMEOUT_MS: values['timeout-ms'] } : {}),
  },
});
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      `${coordinator.url}${path}`,
      { method, agent, headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

try {
  const login = await call('POST', '/v1/auth/login', {}, CHILD_OWNER);
  const session = { authorization: `Bearer ${login.body.token}` };
  const orgs = await call('GET', '/v1/orgs', session);
  const issued = await call('POST', `/v1/orgs/${orgs.body[0].id}/api-tokens`, session, { name: 'probe', scopes: [] });
  const headers = { authorization: `Bearer ${issued.body.token}` };

  const probe = async (stop: () => boolean, spacingMs: number) => {
    const samples: number[] = [];
    const failures: number[] = [];
    while (!stop()) {
      const started = performance.now();
      const res = await call('GET', '/v1/agents', headers);
      samples.push(performance.now() - started);
      if (res.status !== 200) failures.push(res.status);
      await new Promise((r) => setTimeout(r, spacingMs));
    }
    return { samples, failures };
  };

  let idleCount = 0;
  const idle = await probe(() => idleCount++ >= 300, 2);
  const rssBefore = memoryMb(coordinator.pid);
  console.log(formatLatency('GET /v1/agents, idle', summarize(idle.samples)));

  let flooding = true;
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, memoryMb(coordinator.pid))), 200);
  const flooder = spawn(
    process.execPath,
    [
      ...process.execArgv,
      fileURLToPath(new URL('./lib/half-sent-flood.ts', import.meta.url)),
      '--url',
      coordinator.url,
      '--count',
      String(count),
      '--addresses',
      values.addresses!,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  flooder.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  const floodDone = new Promise<void>((resolve) => flooder.on('exit', () => resolve()));
  void floodDone.then(() => (flooding = false));
  const during = await probe(() => !flooding, 10);
  clearInterval(sampler);
  const flood = JSON.parse(out) as {
    openedMs: number;
    results: { lifetimeMs: number; status: number | null; error: string | null }[];
  };

  const byStatus = new Map<string, number>();
  for (const r of flood.results) {
    const key = r.status === null ? `no answer (${r.error ?? 'closed'})` : String(r.status);
    byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
  }
  const held = flood.results.filter((r) => r.status === 408).map((r) => r.lifetimeMs);
  const lifetimes = summarize(flood.results.map((r) => r.lifetimeMs));
  const bound = timeoutMs + Math.min(1_000, timeoutMs / 4);
  console.log(
    `flood: ${flood.results.length} connections opened in ${(flood.openedMs / 1000).toFixed(1)} s; answers: ` +
      [...byStatus].map(([k, v]) => `${k} x${v}`).join(', '),
  );
  console.log(formatLatency('flood connection lifetime', lifetimes));
  if (held.length > 0) console.log(formatLatency('  of those answered 408', summarize(held)));
  const duringSummary = summarize(during.samples);
  console.log(formatLatency('GET /v1/agents, during the flood', duringSummary));
  if (during.failures.length > 0) console.log(`  probe failures: ${during.failures.join(', ')}`);

  await new Promise((r) => setTimeout(r, 5_000));
  const rssAfter = memoryMb(coordinator.pid);
  console.log(
    `coordinator RSS: before ${rssBefore.toFixed(1)} MB, peak ${rssPeak.toFixed(1)} MB, 5 s after ${rssAfter.toFixed(1)} MB`,
  );

  const closedInTime = lifetimes.max <= bound;
  const answered = during.failures.length === 0 && duringSummary.p99 < P99_GOAL_MS;
  console.log(
    `goal: p99 during the flood < ${P99_GOAL_MS} ms: ${answered ? 'MET' : 'NOT MET'} (${duringSummary.p99.toFixed(1)} ms); ` +
      `every connection closed within ${bound} ms: ${closedInTime ? 'MET' : 'NOT MET'} (longest ${lifetimes.max.toFixed(0)} ms)`,
  );
} finally {
  agent.destroy();
  await coordinator.close();
}
