/**
 * Benchmark: presigned downloads during a sign-in flood. Goal: while 32 clients sign in over and
 * over with unknown emails (each one costs a full password hash, by design), the p50 of a 1 MiB
 * presigned download stays within 2x its idle p50.
 *
 *   pnpm build && pnpm bench bench/login-flood.ts [--clients 32] [--seconds 10]
 *
 * The coordinator is the real `drover-coordinator start` in a child process. Each flooding client
 * signs in from its own loopback address (127.0.2.x) with a new unknown email every time, so the
 * per-account and per-address throttles stay out of the way and every attempt reaches the hasher:
 * what is measured is how the hashing shares the machine with file I/O. This process downloads
 * one 1 MiB file through a fresh presigned URL, one download after the other, first idle, then
 * during the flood.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { CHILD_OWNER, startChildCoordinator } from './lib/child-coordinator.js';
import { jsonCall, request } from './lib/fleet-sim.js';
import { formatLatency, summarize } from './lib/latency.js';
import { integerOption } from './lib/options.js';
import { machineNote } from './lib/report.js';

const GOAL = 2;
const { values } = parseArgs({
  options: { clients: { type: 'string', default: '32' }, seconds: { type: 'string', default: '10' } },
});
const clients = integerOption('clients', values.clients!, 1);
const seconds = integerOption('seconds', values.seconds!, 1);

console.log(`login flood: ${clients} clients for ${seconds} s against 1 MiB downloads; ${machineNote()}`);
const coordinator = await startChildCoordinator({ env: { API_TOKEN_READ_RATE_LIMIT_PER_MINUTE: '1000000000' } });
const base = `${coordinator.url}/v1`;
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });

function signIn(email: string, password: string, localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ email, password });
    const req = http.request(`${base}/auth/login`, {
      method: 'POST',
      localAddress,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

try {
  const session = (await jsonCall(`${base}/auth/login`, { method: 'POST', body: CHILD_OWNER })).token as string;
  const orgId = (await jsonCall(`${base}/orgs`, { token: session }))[0].id as string;
  const token = (
    await jsonCall(`${base}/orgs/${orgId}/api-tokens`, {
      method: 'POST',
      token: session,
      expected: 201,
      body: { name: 'files', scopes: [{ type: 'storage', bindingIds: null, permissions: ['read', 'write'] }] },
    })
  ).token as string;
  const content = randomBytes(1024 * 1024)
    .toString('base64')
    .slice(0, 1024 * 1024);
  const presign = await jsonCall(`${base}/storage/files/presign-upload`, {
    method: 'POST',
    token,
    expected: 201,
    body: { cleanupRule: 'persistent', filename: 'one-mib.bin' },
  });
  const put = await request(presign.uploadUrl as string, { method: 'PUT', headers: presign.headers, body: content });
  if (put.status !== 200) throw new Error(`upload: HTTP ${put.status}`);
  await jsonCall(`${base}/storage/files/${presign.fileId}/complete`, { method: 'POST', token });

  const download = async () => {
    const { downloadUrl } = await jsonCall(`${base}/storage/files/${presign.fileId}/download-url`, {
      token,
      agent: keepAlive,
    });
    const started = performance.now();
    const got = await request(downloadUrl as string, { agent: keepAlive });
    if (got.status !== 200 || got.text.length !== content.length) throw new Error(`download: HTTP ${got.status}`);
    return performance.now() - started;
  };
  const downloads = async (until: () => boolean) => {
    const samples: number[] = [];
    while (!until()) samples.push(await download());
    return samples;
  };

  let idleLeft = 100;
  const idle = summarize(await downloads(() => idleLeft-- <= 0));
  console.log(formatLatency('1 MiB download, idle', idle));

  const end = performance.now() + seconds * 1000;
  const statuses = new Map<number, number>();
  const flood = Array.from({ length: clients }, async (_, i) => {
    let n = 0;
    while (performance.now() < end) {
      const status = await signIn(`nobody-${i}-${n++}@example.test`, 'wrong password', `127.0.2.${i + 1}`);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  });
  const during = summarize(await downloads(() => performance.now() >= end));
  await Promise.all(flood);
  console.log(formatLatency('1 MiB download, during the sign-in flood', during));
  const total = [...statuses.values()].reduce((a, b) => a + b, 0);
  console.log(
    `sign-ins answered: ${total} in ${seconds} s (${(total / seconds).toFixed(1)}/s): ` +
      [...statuses].map(([s, n]) => `${s} x${n}`).join(', '),
  );
  const ratio = during.p50 / idle.p50;
  console.log(
    `goal: download p50 during the flood <= ${GOAL} x idle: ${ratio <= GOAL ? 'MET' : 'NOT MET'} (${ratio.toFixed(2)} x)`,
  );
} finally {
  keepAlive.destroy();
  await coordinator.close();
}
