import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fetchArtifact } from '../../src/deploy/fetch-artifact.js';
import { ResumableDownload, type DownloadRequest } from '../../src/files/download.js';
import { DownloadProgress } from '../../src/files/download-progress.js';
import { SpeedMeter } from '../../src/files/download-speed.js';
import { discardOtherPartials, prunePartials } from '../../src/files/partial-download.js';
import { retryTransfer } from '../../src/files/retry-transfer.js';
import { TransferAborted, TransferError } from '../../src/files/transfer-error.js';
import { Backoff } from '../../src/util/backoff.js';
import { eventually } from '../../../test/helpers/poll.js';
import { sha256 } from './blob-server.js';
import { startRangeServer, type RangeServer } from './range-server.js';

const MB = 1_000_000;
const quick = () => new Backoff({ baseMs: 1, capMs: 1, random: () => 0 });

let dir: string;
let partials: string;
let server: RangeServer | undefined;
let lines: string[];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-download-'));
  partials = path.join(dir, 'downloads');
  lines = [];
});
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.close();
  server = undefined;
  fs.rmSync(dir, { recursive: true, force: true });
});

async function serve(size: number): Promise<RangeServer> {
  server = await startRangeServer(randomBytes(size));
  return server;
}

function request(s: RangeServer, extra: Partial<DownloadRequest> = {}): DownloadRequest {
  return {
    target: path.join(dir, 'file.bin'),
    expectedSize: s.content.length,
    expectedSha256: sha256(s.content),
    label: 'artifact app 1.2.3',
    partialsDir: partials,
    signal: new AbortController().signal,
    log: (text) => lines.push(text),
    ...extra,
  };
}

/** Attempts of one download as the agent makes them (retryTransfer), with a fresh URL after a 403. */
async function download(download: ResumableDownload, s: RangeServer, urls = [s.url()]): Promise<void> {
  let url = urls.shift()!;
  try {
    await retryTransfer(() => download.attempt(url), {
      attempts: 3,
      backoff: quick(),
      signal: new AbortController().signal,
      what: 'download',
      log: (text) => lines.push(text),
      refresh: () => {
        url = urls.shift() ?? url;
      },
      progressed: () => download.progressed(),
    });
  } finally {
    download.close();
  }
}

const partialFiles = () => (fs.existsSync(partials) ? fs.readdirSync(partials).sort() : []);
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('the download succeeded');
    },
    (error: unknown) => error as TransferError,
  );

describe('a download cut every few MB', () => {
  it('resumes with Range each time: a 100 MB artifact fetched in < 1.2 x its size, verified and in place', async () => {
    const s = await serve(100 * MB);
    s.mishaps.cutEvery = 4 * MB;
    const target = path.join(dir, 'app-1.2.3.tar');
    const outcome = await fetchArtifact({
      target,
      source: { url: s.url(), size: s.content.length, sha256: sha256(s.content) },
      refresh: () => Promise.reject(new Error('no refresh expected')),
      signal: new AbortController().signal,
      log: (text) => lines.push(text),
      label: 'artifact app 1.2.3',
      applicationId: 'app-id',
      downloads: { partialsDir: partials },
      backoff: quick(),
    });
    expect(outcome).toEqual({ ok: true, bytes: 100 * MB });
    const ratio = s.bytesSent / s.content.length;
    console.log(
      `100 MB cut every 4 MB: ${s.requests.length} requests, ${s.bytesSent} bytes fetched (${ratio.toFixed(3)} x the size)`,
    );
    expect(ratio).toBeLessThan(1.2);
    // One request per 4 MB piece, and an extra one now and then on a busy machine (a stalled read retried).
    expect(s.requests.length).toBeGreaterThanOrEqual(25);
    expect(s.requests.length).toBeLessThanOrEqual(30);
    expect(s.requests[0]).toEqual({ range: undefined, ifRange: undefined, status: 200 });
    // Every later request asks for the rest of the file, from where the bytes stopped.
    for (const request of s.requests.slice(1)) {
      expect(request).toEqual({ range: expect.stringMatching(/^bytes=[1-9]\d*-$/), ifRange: s.etag, status: 206 });
    }
    expect(sha256(fs.readFileSync(target))).toBe(sha256(s.content));
    expect(partialFiles()).toEqual([]);
    // A progress line at each tenth, readable by a technician.
    const progress = lines.filter((l) => /^downloading artifact app 1\.2\.3: \d+%/.test(l));
    expect(progress.map((l) => /: (\d+)%/.exec(l)![1])).toEqual([
      '10',
      '20',
      '30',
      '40',
      '50',
      '60',
      '70',
      '80',
      '90',
      '100',
    ]);
    expect(progress[3]).toMatch(
      /^downloading artifact app 1\.2\.3: 40% \(4\d(\.\d)? MB of 100 MB, [\d.]+ [KMG]?B\/s\)$/,
    );
  });

  it('still gives up after its attempts in a row that get no byte', async () => {
    const s = await serve(10_000);
    s.mishaps.cutEvery = 4000;
    const first = new ResumableDownload(request(s));
    await first.attempt(s.url()).catch(() => {});
    expect(first.have).toBe(4000);
    await s.close(); // the server is gone: no attempt moves a byte
    const error = await failure(download(first, s));
    expect(error).toBeInstanceOf(TransferError);
    expect(error.kind).toBe('retry');
    expect(lines.filter((l) => l.includes('trying again'))).toHaveLength(2);
    expect(partialFiles()).toEqual([`${sha256(s.content)}.json`, `${sha256(s.content)}.part`]);
  });
});

describe('progress lines', () => {
  it('come at each further tenth with the rate since the last one, again after a start over, none under 1 MB', () => {
    const got: string[] = [];
    const progress = new DownloadProgress('input file `bundle`', 10 * MB, (text) => got.push(text));
    progress.begin(0, 0);
    progress.update(0.5 * MB, 500);
    progress.update(5.5 * MB, 2000); // jumps over several tenths: one line
    progress.update(5.9 * MB, 2100);
    progress.begin(5.9 * MB, 5000); // a reconnect: the rate counts from here
    progress.update(6 * MB, 5100);
    progress.reset(); // started over from zero
    progress.begin(0, 6000);
    progress.update(1 * MB, 7000);
    expect(got).toEqual([
      'downloading input file `bundle`: 50% (5.5 MB of 10 MB, 2.8 MB/s)',
      'downloading input file `bundle`: 60% (6 MB of 10 MB, 1 MB/s)',
      'downloading input file `bundle`: 10% (1 MB of 10 MB, 1 MB/s)',
    ]);
    const small = new DownloadProgress('x', 999_999, (text) => got.push(text));
    small.begin(0, 0);
    small.update(999_999, 1);
    expect(got).toHaveLength(3);
  });
});

describe('a download stopped and taken up again (an agent restart)', () => {
  it('keeps the partial and its record; a new download of the same bytes fetches only what is missing', async () => {
    const s = await serve(3 * MB);
    // About 1 s for the 3 MB: the stop comes after the first MB, before the last, however late the
    // poll below sees it on a busy machine (at 256 KB every 5 ms the whole body once came first).
    s.mishaps.trickle = { bytes: 64 * 1024, everyMs: 20 };
    const stop = new AbortController();
    const first = new ResumableDownload(request(s, { signal: stop.signal }));
    const running = first.attempt(s.url());
    await eventually(() => first.have >= MB, 10_000, 'the first MB of the download');
    stop.abort('the agent shut down');
    expect(await failure(running)).toBeInstanceOf(TransferAborted);
    first.close();
    const kept = first.have;
    const hex = sha256(s.content);
    expect(partialFiles()).toEqual([`${hex}.json`, `${hex}.part`]);
    expect(JSON.parse(fs.readFileSync(path.join(partials, `${hex}.json`), 'utf8'))).toMatchObject({
      version: 1,
      sha256: hex,
      size: 3 * MB,
      url: s.url().replace(/\?.*$/, ''),
      etag: s.etag,
    });

    // The next process: a new download, a new (fresh) URL, the same bytes wanted. (The server
    // counts what it trickles until it sees the first answer closed: waited for on a busy machine.)
    s.mishaps.trickle = null;
    await eventually(() => s.trickling === 0, 10_000, 'the server to see the first download closed');
    const sentBefore = s.bytesSent;
    await download(new ResumableDownload(request(s)), s, [s.url('after-restart')]);
    expect(s.requests.at(-1)).toEqual({ range: `bytes=${kept}-`, ifRange: s.etag, status: 206 });
    expect(s.bytesSent - sentBefore).toBe(3 * MB - kept);
    expect(lines).toContain(
      `resuming the download of artifact app 1.2.3 at ${(kept / MB).toFixed(1).replace(/\.0$/, '')} MB of 3 MB (${Math.floor((kept * 100) / (3 * MB))}%), kept from an earlier attempt`,
    );
    expect(sha256(fs.readFileSync(path.join(dir, 'file.bin')))).toBe(hex);
    expect(partialFiles()).toEqual([]);
  });

  it('starts over, and still verifies the file, when the record beside a partial is not readable', async () => {
    const s = await serve(100_000);
    s.mishaps.cutEvery = 40_000;
    const first = new ResumableDownload(request(s));
    await first.attempt(s.url()).catch(() => {});
    first.close();
    expect(first.have).toBe(40_000);
    const hex = sha256(s.content);
    fs.writeFileSync(path.join(partials, `${hex}.json`), '{"version": 1, "sha256": "trunc');
    s.mishaps.cutEvery = 0;
    const before = s.requests.length;
    await download(new ResumableDownload(request(s)), s, [s.url()]);
    expect(s.requests.slice(before)).toEqual([{ range: undefined, ifRange: undefined, status: 200 }]);
    expect(sha256(fs.readFileSync(path.join(dir, 'file.bin')))).toBe(hex);
    expect(partialFiles()).toEqual([]);
  });

  it('starts over when the server answers a range with the whole file, or 416, or another ETag', async () => {
    const s = await serve(100_000);
    for (const mishap of ['ignoreRange', 'refuseRange', 'changed'] as const) {
      fs.rmSync(path.join(dir, 'file.bin'), { force: true });
      s.mishaps = { cutEvery: 40_000, trickle: null, ignoreRange: false, refuseRange: false };
      const original = s.content;
      const first = new ResumableDownload(request(s));
      await first.attempt(s.url()).catch(() => {});
      first.close();
      expect(first.have, mishap).toBe(40_000);
      s.mishaps.cutEvery = 0;
      if (mishap === 'changed') s.replace(randomBytes(100_000));
      else s.mishaps[mishap] = true;
      s.requests = [];
      const req = request(s, mishap === 'changed' ? {} : { expectedSha256: sha256(original) });
      await download(new ResumableDownload(req), s);
      expect(
        s.requests.map((r) => r.status),
        mishap,
      ).toEqual(mishap === 'refuseRange' ? [416, 200] : [200]);
      expect(sha256(fs.readFileSync(path.join(dir, 'file.bin'))), mishap).toBe(sha256(s.content));
      expect(
        lines.some((l) => l.includes('starts over')),
        mishap,
      ).toBe(true);
      if (mishap === 'changed') s.replace(original);
    }
  });

  it('starts over from zero once when resumed bytes do not match, then fails clearly and removes the partial', async () => {
    const s = await serve(100_000);
    s.mishaps.cutEvery = 40_000;
    const first = new ResumableDownload(request(s));
    await first.attempt(s.url()).catch(() => {});
    first.close();
    // The partial was damaged on disk (a power cut): the resumed file does not match.
    const part = path.join(partials, `${sha256(s.content)}.part`);
    const damaged = fs.readFileSync(part);
    damaged[10] = damaged[10]! ^ 0xff;
    fs.writeFileSync(part, damaged);
    s.mishaps.cutEvery = 0;
    await download(new ResumableDownload(request(s)), s);
    expect(lines.some((l) => l.includes('it was resumed, so it starts over from zero'))).toBe(true);
    expect(sha256(fs.readFileSync(path.join(dir, 'file.bin')))).toBe(sha256(s.content));

    // Bytes that are not the expected ones from the start: refused, nothing left.
    fs.rmSync(path.join(dir, 'file.bin'));
    const error = await failure(download(new ResumableDownload(request(s, { expectedSha256: 'ab'.repeat(32) })), s));
    expect(error.kind).toBe('final');
    expect(error.mismatch).toBe(true);
    expect(error.message).toBe(
      `the download does not match its checksum: expected SHA-256 ${'ab'.repeat(32)}, got ${sha256(s.content)}`,
    );
    expect(fs.existsSync(path.join(dir, 'file.bin'))).toBe(false);
    expect(partialFiles()).toEqual([]);
  });
});

/** fetchArtifact of `content` at `url`, as an update job makes it (3 attempts); ends after 20 s at most. */
function fetchFrom(url: string, content: Buffer, extra: { minSpeed?: number } = {}) {
  return fetchArtifact({
    target: path.join(dir, 'app-1.2.3.tar'),
    source: { url, size: content.length, sha256: sha256(content) },
    refresh: () => Promise.reject(new Error('no refresh expected')),
    signal: AbortSignal.timeout(20_000),
    log: (text) => lines.push(text),
    label: 'artifact app 1.2.3',
    applicationId: 'app-id',
    downloads: { partialsDir: partials, ...extra },
    attempts: 3,
    backoff: quick(),
  });
}

describe('a server that does not resume and drops the connection before the end', () => {
  it('is given up after the attempts, naming the cause, when it ignores Range or refuses it with 416', async () => {
    const s = await serve(100_000);
    for (const mishap of ['ignoreRange', 'refuseRange'] as const) {
      fs.rmSync(partials, { recursive: true, force: true });
      s.mishaps = { cutEvery: 40_000, trickle: null, ignoreRange: false, refuseRange: false, [mishap]: true };
      s.requests = [];
      s.bytesSent = 0;
      lines = [];
      const started = performance.now();
      const outcome = await fetchFrom(s.url(), s.content, { minSpeed: 1000 });
      expect(performance.now() - started, mishap).toBeLessThan(5000);
      const cause = mishap === 'ignoreRange' ? 'it ignores Range' : 'it refuses Range with HTTP 416';
      expect(outcome, mishap).toEqual({
        ok: false,
        refused: false,
        aborted: null,
        message: `the server does not resume downloads (${cause}) and drops the connection after 40 KB of 100 KB`,
      });
      // The first attempt got new bytes; the two after it got the same ones again: no progress.
      expect(
        s.requests.map((r) => r.status),
        mishap,
      ).toEqual(mishap === 'ignoreRange' ? [200, 200, 200] : [200, 416, 200, 416, 200]);
      expect(s.bytesSent, mishap).toBe(120_000);
      expect(lines.filter((l) => l.includes('trying again')).map((l) => / \(attempt \d of 3\)$/.exec(l)?.[0])).toEqual([
        ' (attempt 2 of 3)',
        ' (attempt 3 of 3)',
      ]);
      expect(partialFiles(), mishap).toHaveLength(2); // what it has is kept
    }
  });

  it('still counts an attempt that gets further than ever before, after a start over, as progress', async () => {
    const s = await serve(100_000);
    s.mishaps.cutEvery = 40_000;
    const first = new ResumableDownload(request(s));
    await first.attempt(s.url()).catch(() => {});
    expect(first.progressed()).toBe(true);
    s.mishaps.ignoreRange = true;
    await first.attempt(s.url()).catch(() => {});
    expect(first.progressed()).toBe(false); // 40 KB again, from zero
    s.mishaps.cutEvery = 60_000;
    await first.attempt(s.url()).catch(() => {});
    expect(first.progressed()).toBe(true); // 60 KB: more than ever
    s.mishaps.cutEvery = 0;
    await first.attempt(s.url());
    first.close();
    expect(sha256(fs.readFileSync(path.join(dir, 'file.bin')))).toBe(sha256(s.content));
  });
});

/**
 * A server for `content` whose first answer is cut after `cutAt` bytes and whose later answers
 * are `wrong` (a proxy or captive portal in the way), each counted in `ranges`.
 */
async function startWrongServer(
  content: Buffer,
  cutAt: number,
  wrong: (res: http.ServerResponse, range: string | undefined) => void,
) {
  const ranges: (string | undefined)[] = [];
  const server = http.createServer((req, res) => {
    ranges.push(req.headers.range);
    if (ranges.length > 1) {
      wrong(res, req.headers.range);
      return;
    }
    res.writeHead(200, { 'content-length': String(content.length) });
    res.write(content.subarray(0, cutAt), () => res.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/file`,
    ranges,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('a wrong answer to a resume (a proxy, a captive portal)', () => {
  const portal = '<html>log in first</html>'.padEnd(50, ' ');
  const answers = {
    'HTTP 200 of another length': {
      answer: (res: http.ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/html', 'content-length': '50' }).end(portal);
      },
      message: 'the server (or a proxy on the way) answered HTTP 200 and announced 50 bytes, but the file has 1000000',
    },
    'HTTP 206 of another length': {
      answer: (res: http.ServerResponse) => {
        res.writeHead(206, { 'content-range': 'bytes 900000-999999/1000000', 'content-length': '50' }).end(portal);
      },
      message:
        'the server (or a proxy on the way) answered HTTP 206 and announced 50 bytes, but the rest of the file has 100000',
    },
    'HTTP 206 for a file of another size': {
      answer: (res: http.ServerResponse) => {
        res.writeHead(206, { 'content-range': 'bytes 900000-900049/900050', 'content-length': '50' }).end(portal);
      },
      message:
        'the server (or a proxy on the way) answered HTTP 206 for a file of 900050 bytes, but the file has 1000000',
    },
  };

  it('keeps the partial and fails the job after the attempts (not refused), naming the answer', async () => {
    const content = randomBytes(MB);
    const hex = sha256(content);
    for (const [name, { answer, message }] of Object.entries(answers)) {
      fs.rmSync(partials, { recursive: true, force: true });
      lines = [];
      const wrong = await startWrongServer(content, 900_000, answer);
      try {
        const outcome = await fetchFrom(wrong.url, content);
        expect(outcome, name).toEqual({ ok: false, refused: false, aborted: null, message });
        expect(wrong.ranges, name).toEqual([undefined, 'bytes=900000-', 'bytes=900000-']);
      } finally {
        await wrong.close();
      }
      expect(partialFiles(), name).toEqual([`${hex}.json`, `${hex}.part`]);
      expect(fs.statSync(path.join(partials, `${hex}.part`)).size, name).toBe(900_000);
      expect(fs.existsSync(path.join(dir, 'app-1.2.3.tar')), name).toBe(false);

      // The next job, the real server back: only the missing 100 KB are fetched.
      const s = await startRangeServer(content);
      try {
        expect(await fetchFrom(s.url(), content), name).toEqual({ ok: true, bytes: MB });
        expect(s.requests, name).toEqual([{ range: 'bytes=900000-', ifRange: undefined, status: 206 }]);
        expect(s.bytesSent, name).toBe(100_000);
      } finally {
        await s.close();
      }
      expect(sha256(fs.readFileSync(path.join(dir, 'app-1.2.3.tar'))), name).toBe(hex);
      fs.rmSync(path.join(dir, 'app-1.2.3.tar'));
    }
  });

  it('is retried when the body is longer than the file (no length announced): not a refusal', async () => {
    const s = await serve(10_000);
    const wrong = await startWrongServer(s.content, 4000, (res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(Buffer.alloc(20_000, 0x20));
    });
    try {
      const outcome = await fetchFrom(wrong.url, s.content);
      expect(outcome).toEqual({
        ok: false,
        refused: false,
        aborted: null,
        message: 'the server (or a proxy on the way) sent more than the 10000 bytes of the file',
      });
    } finally {
      await wrong.close();
    }
  });
});

describe('an expired URL', () => {
  it('is replaced by a fresh one, and the download goes on from where it stopped', async () => {
    const s = await serve(100_000);
    s.mishaps.cutEvery = 30_000;
    s.expired.add('old');
    const first = new ResumableDownload(request(s));
    await first.attempt(s.url('first')).catch(() => {});
    s.mishaps.cutEvery = 0;
    await download(first, s, [s.url('old'), s.url('new')]);
    expect(s.requests.map((r) => [r.range, r.status])).toEqual([
      [undefined, 200],
      ['bytes=30000-', 403],
      ['bytes=30000-', 206],
    ]);
    expect(lines.some((l) => l.includes('HTTP 403: This URL has expired') && l.includes('trying again'))).toBe(true);
    expect(s.bytesSent).toBe(100_000);
  });
});

describe('a slow download', () => {
  it('is given up when slower than the minimum speed over the window, naming both speeds; the partial is kept', async () => {
    const s = await serve(200_000);
    s.mishaps.trickle = { bytes: 500, everyMs: 20 }; // ~25 KB/s
    const started = performance.now();
    const error = await failure(
      download(new ResumableDownload(request(s, { minSpeed: 100_000, speedWindowMs: 400 })), s),
    );
    expect(performance.now() - started).toBeLessThan(5000);
    expect(error.kind).toBe('final');
    expect(error.message).toMatch(
      /^the download was too slow: [\d.]+ KB\/s over the last 0\.4 s, below the minimum of 100 KB\/s \(--min-download-speed\)$/,
    );
    expect(s.requests).toHaveLength(1); // not retried: a trickling server is abandoned
    expect(partialFiles()).toHaveLength(2);
  });

  it('is given up too when the server drops the connection after every few bytes (the window spans reconnects)', async () => {
    const s = await serve(100_000);
    s.mishaps.cutEvery = 10;
    const error = await failure(
      download(new ResumableDownload(request(s, { minSpeed: 100_000, speedWindowMs: 300 })), s),
    );
    expect(error.message).toMatch(/^the download was too slow: .* below the minimum of 100 KB\/s/);
    expect(s.requests.length).toBeGreaterThan(3);
    expect(s.bytesSent).toBeLessThan(100_000);
  });

  it('is not judged before a full window, nor at all with a minimum of 0', () => {
    const meter = new SpeedMeter(1000, 60_000, 0);
    meter.add(10, 1000);
    expect(meter.tooSlow(59_999)).toBeNull();
    expect(meter.tooSlow(60_000)).toBeCloseTo(10 / 60);
    meter.add(120_000, 61_000); // 2 KB/s over the last 60 s
    expect(meter.tooSlow(61_000)).toBeNull();
    expect(meter.tooSlow(120_999)).toBeNull(); // 120 KB in (60.999 s, 120.999 s]
    expect(meter.tooSlow(121_000)).toBe(0); // nothing after 61 s
    const off = new SpeedMeter(0, 1000, 0);
    expect(off.tooSlow(1_000_000)).toBeNull();
  });
});

describe('the free disk space', () => {
  it('is checked against what is still missing before any byte is asked, naming both sizes', async () => {
    const s = await serve(3 * MB);
    const statfs = (free: number) => () => Promise.resolve({ bavail: Math.floor(free / 4096), bsize: 4096 });
    const error = await failure(download(new ResumableDownload(request(s, { statfs: statfs(2 * MB) })), s));
    expect(error.kind).toBe('final');
    expect(error.message).toBe(
      `not enough disk space for the download: it needs 3 MB more in ${partials}, 2 MB are available`,
    );
    expect(s.requests).toEqual([]);
    expect(partialFiles()).toEqual([]); // no empty partial left

    // With 2 MB already on disk, 1 MB more is enough.
    s.mishaps.cutEvery = 2 * MB;
    const first = new ResumableDownload(request(s));
    await first.attempt(s.url()).catch(() => {});
    first.close();
    s.mishaps.cutEvery = 0;
    await download(new ResumableDownload(request(s, { statfs: statfs(1.5 * MB) })), s);
    expect(fs.statSync(path.join(dir, 'file.bin')).size).toBe(3 * MB);
  });
});

/**
 * The partial's writes as a disk that fills up at `room` bytes makes them: the write that crosses
 * it is short (what fits), and the next ones fail with ENOSPC; `full()` is asked of each write
 * that does not fit (false: room came back).
 */
function fillDiskAt(room: number, full: () => boolean): void {
  const open = fs.promises.open.bind(fs.promises);
  vi.spyOn(fs.promises, 'open').mockImplementation(async (...args: Parameters<typeof fs.promises.open>) => {
    const handle = await open(...args);
    const write = handle.write.bind(handle) as (
      b: Buffer,
      o: number,
      l: number,
      p: number,
    ) => Promise<{ bytesWritten: number; buffer: Buffer }>;
    (handle as unknown as { write: typeof write }).write = async (buffer, offset, length, position) => {
      if (position + length <= room || !full()) return write(buffer, offset, length, position);
      if (position >= room) {
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
      }
      return write(buffer, offset, room - position, position);
    };
    return handle;
  });
}

describe('a disk that fills up during the download', () => {
  it('fails it in words, keeps exactly the bytes written, and lets it resume once there is room', async () => {
    const s = await serve(3 * MB);
    let full = true;
    fillDiskAt(2 * MB + 1234, () => full);
    const part = path.join(partials, `${sha256(s.content)}.part`);
    const error = await failure(download(new ResumableDownload(request(s)), s));
    expect(error.kind).toBe('final');
    expect(error.message).toBe(
      `cannot write ${part}: no space left on the device (ENOSPC; free some: \`df -h ${partials}\`)`,
    );
    expect(fs.statSync(part).size).toBe(2 * MB + 1234);

    full = false; // room again: the next download fetches only the rest
    const sent = s.bytesSent;
    await download(new ResumableDownload(request(s)), s);
    expect(s.bytesSent - sent).toBe(MB - 1234);
    expect(fs.readFileSync(path.join(dir, 'file.bin')).equals(s.content)).toBe(true);
  });

  it('never leaves a hole where a write was short and room came back before the next one', async () => {
    const s = await serve(3 * MB);
    let short = true;
    fillDiskAt(MB + 5, () => {
      // Asked only of a write that does not fit: that one is short, and room is back at once.
      const now = short;
      short = false;
      return now;
    });
    await download(new ResumableDownload(request(s)), s);
    expect(fs.readFileSync(path.join(dir, 'file.bin')).equals(s.content)).toBe(true);
  });
});

describe('partials left behind', () => {
  it('of another release of the same application are removed when a download for it starts', async () => {
    const s = await serve(50_000);
    fs.mkdirSync(partials, { recursive: true });
    const old = 'cd'.repeat(32);
    fs.writeFileSync(path.join(partials, `${old}.part`), 'old bytes');
    fs.writeFileSync(path.join(partials, `${old}.json`), JSON.stringify({ version: 1, slot: 'artifact:app' }));
    fs.writeFileSync(
      path.join(partials, `${'ef'.repeat(32)}.json`),
      JSON.stringify({ version: 1, slot: 'artifact:other' }),
    );
    await download(new ResumableDownload(request(s, { slot: 'artifact:app' })), s);
    expect(partialFiles()).toEqual([`${'ef'.repeat(32)}.json`]);
    expect(discardOtherPartials(partials, 'artifact:other', 'x')).toBe(1);
  });

  it('are removed at start when untouched for longer than the retention', () => {
    fs.mkdirSync(partials, { recursive: true });
    const now = Date.now();
    for (const [name, ageMs] of [
      ['a.part', 10_000],
      ['a.json', 10_000],
      ['b.part', 10],
      ['b.json', 10_000], // its bytes were written lately: kept with them
    ] as const) {
      fs.writeFileSync(path.join(partials, name), '');
      fs.utimesSync(path.join(partials, name), (now - ageMs) / 1000, (now - ageMs) / 1000);
    }
    expect(prunePartials(partials, 5000, now)).toBe(2);
    expect(partialFiles()).toEqual(['b.json', 'b.part']);
    expect(prunePartials(path.join(dir, 'none'), 5000, now)).toBe(0);
  });
});
