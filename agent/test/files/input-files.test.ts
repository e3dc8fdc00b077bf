import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fetchInputFiles, type InputFilesRequest } from '../../src/files/input-files.js';
import { jobTimeSignal } from '../../src/files/job-phases.js';
import { TransferError } from '../../src/files/transfer-error.js';
import { Backoff } from '../../src/util/backoff.js';
import { fakeApi, sha256, startBlobServer, type BlobServer, type FakeApi } from './blob-server.js';
import { startRangeServer } from './range-server.js';

const FILE_ID = '11111111-2222-4333-8444-555555555555';
const CONTENT = Buffer.from('hello input file\n');

let server: BlobServer;
let api: FakeApi;
let workspace: string;
let lines: string[];

beforeAll(async () => {
  server = await startBlobServer();
});
afterAll(() => server?.close());
beforeEach(() => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-inputs-'));
  server.reset();
  server.blobs.set('a', CONTENT);
  api = fakeApi(server);
  lines = [];
});
afterEach(() => fs.rmSync(workspace, { recursive: true, force: true }));

const ref = (extra: Record<string, unknown> = {}) => ({
  __type: 'FileRef',
  id: FILE_ID,
  downloadUrl: `${server.url}/blob/a`,
  size: CONTENT.length,
  sha256: sha256(CONTENT),
  filename: 'greeting.txt',
  contentType: 'text/plain',
  ...extra,
});

function fetch(params: Record<string, unknown>, extra: Partial<InputFilesRequest> = {}) {
  return fetchInputFiles({
    jobId: 'job-1',
    params,
    workspace,
    api,
    signal: new AbortController().signal,
    log: (text) => lines.push(text),
    backoff: new Backoff({ baseMs: 1, capMs: 1, random: () => 0 }),
    ...extra,
  });
}

/** Every file left under inputs/, relative. */
function inputsLeft(): string[] {
  const dir = path.join(workspace, 'inputs');
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[])
    .filter((p) => fs.statSync(path.join(dir, p)).isFile())
    .sort();
}

describe('fetchInputFiles', () => {
  it('downloads a FileRef param into inputs/<param>/<filename>, verified, and gives steps its path', async () => {
    const result = await fetch({ bundle: ref(), who: 'world', count: 3 });
    const target = path.join(workspace, 'inputs', 'bundle', 'greeting.txt');
    expect(result).toEqual({
      ok: true,
      count: 1,
      bytes: CONTENT.length,
      params: {
        bundle: {
          __type: 'FileRef',
          id: FILE_ID,
          filename: 'greeting.txt',
          contentType: 'text/plain',
          size: CONTENT.length,
          sha256: sha256(CONTENT),
          path: target,
        },
        who: 'world',
        count: 3,
      },
      envParams: { bundle: target, who: 'world', count: 3 },
    });
    expect(fs.readFileSync(target)).toEqual(CONTENT);
    expect(fs.statSync(target).mode & 0o777).toBe(0o600);
    expect(lines[0]).toBe('downloading input file `bundle`: greeting.txt (17 B)');
    expect(lines[1]).toMatch(/^input file `bundle` ready: inputs\/bundle\/greeting.txt \(17 B, SHA-256 verified, /);
  });

  it('fails, naming the param, when the SHA-256 does not match, and leaves no file behind', async () => {
    const result = await fetch({ bundle: ref({ sha256: 'a'.repeat(64) }) });
    expect(result).toEqual({
      ok: false,
      aborted: null,
      message:
        `input file \`bundle\` (greeting.txt, file ${FILE_ID}) could not be downloaded: the download does not match ` +
        `its checksum: expected SHA-256 ${'a'.repeat(64)}, got ${sha256(CONTENT)}; no step was run`,
    });
    expect(inputsLeft()).toEqual([]);
  });

  it('refuses a download larger or smaller than announced, leaving nothing behind', async () => {
    server.blobs.set('big', Buffer.alloc(5000, 1));
    const bigger = await fetch({ f: ref({ downloadUrl: `${server.url}/blob/big`, size: 10 }) });
    expect(bigger).toMatchObject({
      ok: false,
      message: expect.stringContaining('announced 5000 bytes, but the file has 10'),
    });
    const smaller = await fetch({ f: ref({ size: CONTENT.length + 1 }) });
    expect(smaller).toMatchObject({ ok: false, message: expect.stringContaining('could not be downloaded') });
    expect(inputsLeft()).toEqual([]);
  });

  it('asks the coordinator for a fresh URL when the one it has is refused (expired) and then succeeds', async () => {
    server.script.push(403);
    api.inputs.set(FILE_ID, {
      downloadUrl: `${server.url}/blob/a`,
      expiresInSeconds: 900,
      size: CONTENT.length,
      sha256: sha256(CONTENT),
      filename: 'fresh.txt',
      contentType: 'text/plain',
    });
    const result = await fetch({ bundle: ref() });
    expect(result).toMatchObject({
      ok: true,
      envParams: { bundle: path.join(workspace, 'inputs', 'bundle', 'fresh.txt') },
    });
    expect(lines.some((l) => l.includes('HTTP 403: scripted 403') && l.includes('trying again'))).toBe(true);
  });

  it('resumes over a link cut every 200 KB and an expired URL, and a later job of the same file takes up its partial', async () => {
    const content = randomBytes(1_000_000);
    const range = await startRangeServer(content);
    try {
      range.mishaps.cutEvery = 200_000;
      range.expired.add('old');
      api.inputs.set(FILE_ID, {
        downloadUrl: range.url('new'),
        expiresInSeconds: 900,
        size: content.length,
        sha256: sha256(content),
        filename: 'big.bin',
        contentType: 'application/octet-stream',
      });
      const partials = path.join(workspace, 'downloads');
      const big = ref({
        downloadUrl: range.url('old'),
        size: content.length,
        sha256: sha256(content),
        filename: 'big.bin',
      });
      // The first job is stopped after the second cut (the agent shut down).
      const stop = new AbortController();
      const lines0 = lines;
      const stopped = await fetch(
        { bundle: big },
        {
          signal: stop.signal,
          downloads: { partialsDir: partials },
          log: (text) => {
            lines0.push(text);
            if (text.includes('at 400 KB of 1 MB')) stop.abort('cancelled: the agent shut down');
          },
        },
      );
      expect(stopped).toMatchObject({ ok: false, aborted: 'cancelled' });
      expect(fs.readdirSync(partials)).toHaveLength(2); // the partial and its record, kept

      // The next job of the same file: the rest only, from the kept bytes.
      const result = await fetch({ bundle: big }, { downloads: { partialsDir: partials } });
      expect(result).toMatchObject({ ok: true, bytes: content.length });
      expect(sha256(fs.readFileSync(path.join(workspace, 'inputs', 'bundle', 'big.bin')))).toBe(sha256(content));
      expect(range.bytesSent).toBe(content.length);
      expect(range.requests.map((r) => [r.range ?? 'whole', r.status])).toEqual([
        ['whole', 403],
        ['whole', 200],
        ['bytes=200000-', 206],
        ['bytes=400000-', 403], // the next job's URL from the event has expired too
        ['bytes=400000-', 206],
        ['bytes=600000-', 206],
        ['bytes=800000-', 206],
      ]);
      expect(lines).toContain(
        'resuming the download of input file `bundle` at 400 KB of 1 MB (40%), kept from an earlier attempt',
      );
      expect(fs.readdirSync(partials)).toEqual([]);
    } finally {
      await range.close();
    }
  });

  it('asks for a URL when the job event carried none, and fails clearly when the file is gone', async () => {
    const result = await fetch({ bundle: { __type: 'FileRef', id: FILE_ID } });
    expect(result).toEqual({
      ok: false,
      aborted: null,
      message: `input file \`bundle\` (file ${FILE_ID}) could not be downloaded: asking for a fresh download URL: HTTP 404: File not found; no step was run`,
    });
  });

  it('retries a 5xx and succeeds, and gives up after its attempts', async () => {
    server.script.push(503);
    expect(await fetch({ bundle: ref() })).toMatchObject({ ok: true });
    server.script.push(500, 500, 500);
    const failed = await fetch({ bundle: ref() });
    expect(failed).toMatchObject({ ok: false, message: expect.stringContaining('HTTP 500: scripted 500') });
    expect(api.inputs.size).toBe(0);
  });

  it('does not retry a refusal that retrying cannot fix', async () => {
    api.inputs.set(
      FILE_ID,
      new TransferError('final', 'asking for a fresh download URL: HTTP 409: the job is finished'),
    );
    const result = await fetch({ bundle: ref({ downloadUrl: `${server.url}/blob/missing` }) });
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining('HTTP 404') });
    expect(server.requests.filter((r) => r.startsWith('GET'))).toHaveLength(1);
  });

  it('uses a safe name for a filename that tries to leave the directory', async () => {
    const result = await fetch({ bundle: ref({ filename: '../../../evil\n.sh' }) });
    expect(result).toMatchObject({
      ok: true,
      envParams: { bundle: path.join(workspace, 'inputs', 'bundle', 'evil.sh') },
    });
    expect(inputsLeft()).toEqual(['bundle/evil.sh']);
  });

  it('ends as cancelled when the job is stopped during the download', async () => {
    const stop = new AbortController();
    stop.abort('cancelled: the agent shut down');
    const result = await fetch({ bundle: ref() }, { signal: stop.signal });
    expect(result).toEqual({
      ok: false,
      aborted: 'cancelled',
      message: 'cancelled: the agent shut down; input file `bundle` was being downloaded and no step was run',
    });
    expect(inputsLeft()).toEqual([]);
  });

  it('ends as timed out when the job has no time left', async () => {
    const result = await fetch({ bundle: ref() }, { signal: jobTimeSignal(new AbortController().signal, 0) });
    expect(result).toEqual({
      ok: false,
      aborted: 'timeout',
      message: `the job timed out while downloading input file \`bundle\` (greeting.txt, file ${FILE_ID}); no step was run`,
    });
  });

  it('leaves params without FileRefs alone', async () => {
    const params = { a: 1, b: { __type: 'Other' }, c: [{ __type: 'FileRef', id: FILE_ID }] };
    expect(await fetch(params)).toEqual({ ok: true, count: 0, bytes: 0, params, envParams: params });
    expect(server.requests).toEqual([]);
  });
});
