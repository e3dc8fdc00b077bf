/**
 * Benchmark: upload and download of a 1 GiB file through the local backend's presigned URLs,
 * against writing and reading the same bytes with plain file I/O in the same run. Goals: the
 * presigned transfer reaches at least 0.7 x the plain file I/O throughput, and the coordinator's
 * peak RSS stays under 150 MB during the transfer.
 *
 *   pnpm build && pnpm bench bench/storage-transfer.ts [--size-mib 1024] [--rounds 1] [--source]
 *
 * The coordinator is the real `drover-coordinator start` in a CHILD process (the built
 * `coordinator/dist/cli/main.js`; `--source` runs the TypeScript sources through tsx instead,
 * which costs memory of its own), so that its RSS is its own: it is sampled every 20 ms from
 * /proc/<pid>/status (VmRSS) during each transfer, and VmHWM (the kernel's high-water mark over
 * the process's life) is read at the end.
 *
 * The bytes: a deterministic stream of 1 MiB chunks (a random block with the chunk number in its
 * first bytes), generated in memory by this process for both sides, so neither side reads a
 * source file. Plain file I/O: the stream written to a file in the same temp directory with
 * fsync before close (as the coordinator does before its rename), then the file read back. The
 * presigned side, once per client in every round: presign-upload, a PUT with Content-Length
 * over loopback, complete (the server's SHA-256 is checked against the expected one), then a GET
 * of a download URL, counting the bytes. The download is served from the page cache, like the
 * plain read. Two clients, because on two cores the client's own CPU bounds what is measured:
 *   - node:http in this process, sending the generated stream and counting the received chunks;
 *   - curl when installed (a C client, as a CI job would use), sending the same bytes from a
 *     file in the page cache (written once before the rounds), writing what it receives to
 *     /dev/null.
 * The ratio is printed for each. Results go to docs/performance.md by hand.
 */
import { createHash, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { CHILD_OWNER, memoryMb, startChildCoordinator, type ChildCoordinator } from './lib/child-coordinator.js';
import { integerOption } from './lib/options.js';
import { machineNote, median } from './lib/report.js';

const GOAL_RATIO = 0.7;
const GOAL_RSS_MB = 150;
const CHUNK = 1 << 20;

const { values } = parseArgs({
  options: {
    'size-mib': { type: 'string', default: '1024' },
    rounds: { type: 'string', default: '1' },
    source: { type: 'boolean', default: false },
  },
});
const sizeMib = integerOption('size-mib', values['size-mib'], 1);
const rounds = integerOption('rounds', values.rounds, 1);
const SIZE = sizeMib * CHUNK;

// ---- The bytes ---------------------------------------------------------------------------------

const BLOCK = randomBytes(CHUNK);
/** Chunk `i` of the payload: the random block with `i` written into its first 8 bytes. */
function chunk(i: number): Buffer {
  const c = Buffer.from(BLOCK);
  c.writeBigUInt64BE(BigInt(i), 0);
  return c;
}
function payload(): Readable {
  let i = 0;
  return new Readable({
    highWaterMark: 4 * CHUNK,
    read() {
      this.push(i < sizeMib ? chunk(i++) : null);
    },
  });
}
function expectedSha256(): string {
  const hash = createHash('sha256');
  for (let i = 0; i < sizeMib; i++) hash.update(chunk(i));
  return hash.digest('hex');
}

// ---- The coordinator child's memory -------------------------------------------------------------

/** Samples the child's RSS every 20 ms while `run` runs; returns its result and the peak. */
async function sampled<T>(pid: number, run: () => Promise<T>): Promise<{ result: T; peakMb: number }> {
  let peakMb = memoryMb(pid, 'VmRSS');
  const timer = setInterval(() => (peakMb = Math.max(peakMb, memoryMb(pid, 'VmRSS'))), 20);
  try {
    const result = await run();
    peakMb = Math.max(peakMb, memoryMb(pid, 'VmRSS'));
    return { result, peakMb };
  } finally {
    clearInterval(timer);
  }
}

// ---- HTTP --------------------------------------------------------------------------------------

async function json(method: string, url: string, body?: unknown, token?: string): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

async function storageToken(base: string): Promise<string> {
  const session = (await json('POST', `${base}/auth/login`, CHILD_OWNER)).token as string;
  const orgId = (await json('GET', `${base}/orgs`, undefined, session))[0].id as string;
  const issued = await json(
    'POST',
    `${base}/orgs/${orgId}/api-tokens`,
    {
      name: 'bench',
      scopes: [{ type: 'storage', bindingIds: null, permissions: ['read', 'write', 'delete'] }],
      rateLimitPerMinute: null,
      rateLimitPerHour: null,
      rateLimitPerDay: null,
    },
    session,
  );
  return issued.token as string;
}

/** One HTTP client's side of the transfer: a PUT of the payload, a GET counting the bytes. */
interface Client {
  name: string;
  put(url: string, headers: Record<string, string>): Promise<string>;
  getCounting(url: string): Promise<number>;
}

const nodeClient: Client = { name: 'node:http', put, getCounting };

const execFileAsync = promisify(execFile);

/** curl, sending the payload from `source` (the same bytes, written to a file beforehand). */
async function hasCurl(): Promise<boolean> {
  try {
    await execFileAsync('curl', ['--version']);
    return true;
  } catch {
    return false;
  }
}

function curlClient(source: string): Client {
  const curl = async (args: string[]) =>
    (await execFileAsync('curl', ['--silent', '--show-error', '--fail-with-body', ...args], { maxBuffer: 1 << 20 }))
      .stdout;
  return {
    name: 'curl',
    put: (url, headers) =>
      curl([
        '--upload-file',
        source,
        ...Object.entries(headers).flatMap(([k, v]) => ['--header', `${k}: ${v}`]),
        '--output',
        '-',
        url,
      ]),
    getCounting: async (url) => Number(await curl(['--output', '/dev/null', '--write-out', '%{size_download}', url])),
  };
}

function put(url: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'PUT', headers: { ...headers, 'content-length': String(SIZE) } });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(text) : reject(new Error(`PUT: ${res.statusCode} ${text}`)),
      );
    });
    req.on('error', reject);
    payload().pipe(req);
  });
}

function getCounting(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        if (res.statusCode !== 200) reject(new Error(`GET: ${res.statusCode}`));
        let n = 0;
        res.on('data', (c: Buffer) => (n += c.length));
        res.on('end', () => resolve(n));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

// ---- The measurements --------------------------------------------------------------------------

const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9;
const mbps = (s: number) => SIZE / 1e6 / s;

async function plainRound(dir: string): Promise<{ write: number; read: number }> {
  const file = path.join(dir, 'plain.bin');
  let start = process.hrtime.bigint();
  await pipeline(payload(), fs.createWriteStream(file, { flush: true, highWaterMark: CHUNK }));
  const write = seconds(start);
  start = process.hrtime.bigint();
  let n = 0;
  for await (const c of fs.createReadStream(file, { highWaterMark: CHUNK })) n += (c as Buffer).length;
  const read = seconds(start);
  if (n !== SIZE) throw new Error(`read ${n} bytes back, expected ${SIZE}`);
  fs.rmSync(file);
  return { write, read };
}

async function presignedRound(
  c: ChildCoordinator,
  client: Client,
  token: string,
  sha256: string,
): Promise<{ write: number; read: number; uploadPeakMb: number; downloadPeakMb: number }> {
  const base = `${c.url}/v1`;
  const up = await json(
    'POST',
    `${base}/storage/files/presign-upload`,
    { cleanupRule: 'persistent', filename: 'bench.bin' },
    token,
  );
  const pid = c.pid;
  let start = process.hrtime.bigint();
  const upload = await sampled(pid, () => client.put(up.uploadUrl, up.headers));
  const write = seconds(start);
  const stored = JSON.parse(upload.result) as { size: number; sha256: string };
  if (stored.size !== SIZE || stored.sha256 !== sha256) throw new Error(`stored ${upload.result}, expected ${sha256}`);
  const done = await json('POST', `${base}/storage/files/${up.fileId}/complete`, undefined, token);
  if (done.status !== 'active') throw new Error(`complete: ${JSON.stringify(done)}`);
  const { downloadUrl } = await json('GET', `${base}/storage/files/${up.fileId}/download-url`, undefined, token);
  start = process.hrtime.bigint();
  const download = await sampled(pid, () => client.getCounting(downloadUrl));
  const read = seconds(start);
  if (download.result !== SIZE) throw new Error(`downloaded ${download.result} bytes, expected ${SIZE}`);
  await json('DELETE', `${base}/storage/files/${up.fileId}`, undefined, token);
  return { write, read, uploadPeakMb: upload.peakMb, downloadPeakMb: download.peakMb };
}

type PresignedRound = Awaited<ReturnType<typeof presignedRound>>;

let coordinator: ChildCoordinator | undefined;
try {
  console.log(`storage transfer: ${sizeMib} MiB, ${rounds} round(s); ${machineNote()}`);
  const sha256 = expectedSha256();
  coordinator = await startChildCoordinator({
    source: values.source,
    env: { DROVER_MAX_FILE_BYTES: String(Math.max(SIZE, 5 * 1024 ** 3)) },
  });
  const { pid, dataDir } = coordinator;
  const token = await storageToken(`${coordinator.url}/v1`);
  const idleMb = memoryMb(pid, 'VmRSS');
  console.log(
    `coordinator child pid ${pid} (${values.source ? 'TypeScript sources via tsx' : 'coordinator/dist'}), idle RSS ${idleMb.toFixed(1)} MB`,
  );
  const clients = [nodeClient];
  if (await hasCurl()) {
    const source = path.join(dataDir, 'curl-source.bin');
    await pipeline(payload(), fs.createWriteStream(source, { highWaterMark: CHUNK }));
    clients.push(curlClient(source));
  } else console.log('curl is not installed: measuring through node:http only');

  const plain: { write: number; read: number }[] = [];
  const presigned = new Map<Client, PresignedRound[]>(clients.map((client) => [client, []]));
  for (let r = 0; r < rounds; r++) {
    const p = await plainRound(dataDir);
    plain.push(p);
    const parts = [`plain write ${mbps(p.write).toFixed(0)} MB/s, read ${mbps(p.read).toFixed(0)} MB/s`];
    for (const client of clients) {
      const q = await presignedRound(coordinator, client, token, sha256);
      presigned.get(client)!.push(q);
      parts.push(
        `${client.name} PUT ${mbps(q.write).toFixed(0)} MB/s, GET ${mbps(q.read).toFixed(0)} MB/s ` +
          `(peak RSS ${q.uploadPeakMb.toFixed(1)} / ${q.downloadPeakMb.toFixed(1)} MB)`,
      );
    }
    console.log(`round ${r + 1}: ${parts.join('; ')}`);
  }

  const m = (xs: number[]) => median(xs);
  const row = (label: string, s: number) =>
    console.log(`${label.padEnd(48)} ${mbps(s).toFixed(0).padStart(6)} MB/s  (${s.toFixed(2)} s)`);
  const plainWrite = m(plain.map((p) => p.write));
  const plainRead = m(plain.map((p) => p.read));
  console.log('\nmedians:');
  row('plain file write (fsync before close)', plainWrite);
  row('plain file read', plainRead);
  row('plain write + read', plainWrite + plainRead);
  const ratios: string[] = [];
  for (const client of clients) {
    const runs = presigned.get(client)!;
    const putS = m(runs.map((p) => p.write));
    const getS = m(runs.map((p) => p.read));
    row(`${client.name}: presigned PUT (SHA-256, fsync, rename)`, putS);
    row(`${client.name}: presigned GET`, getS);
    row(`${client.name}: presigned PUT + GET`, putS + getS);
    const ratio = (plainWrite + plainRead) / (putS + getS);
    ratios.push(
      `  ${client.name.padEnd(10)} ${ratio.toFixed(2)} (goal >= ${GOAL_RATIO}; ${ratio >= GOAL_RATIO ? 'meets' : 'BELOW'} the goal); ` +
        `upload alone ${(plainWrite / putS).toFixed(2)}, download alone ${(plainRead / getS).toFixed(2)}`,
    );
  }
  console.log('\nthroughput ratio (upload + download vs write + read), by client:');
  for (const line of ratios) console.log(line);
  const peak = Math.max(...[...presigned.values()].flat().map((p) => Math.max(p.uploadPeakMb, p.downloadPeakMb)));
  const hwm = memoryMb(pid, 'VmHWM');
  console.log(
    `coordinator peak RSS during transfers ${peak.toFixed(1)} MB (goal < ${GOAL_RSS_MB}; ${peak < GOAL_RSS_MB ? 'meets' : 'ABOVE'} the goal); VmHWM over its life ${hwm.toFixed(1)} MB`,
  );
} finally {
  await coordinator?.close();
}
