import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deliverOutputFiles } from '../../src/files/output-files.js';
import { TransferError } from '../../src/files/transfer-error.js';
import { Backoff } from '../../src/util/backoff.js';
import { fakeApi, sha256, startBlobServer, type BlobServer, type FakeApi } from './blob-server.js';

let server: BlobServer;
let api: FakeApi;
let root: string;
let workspace: string;
let lines: string[];

beforeAll(async () => {
  server = await startBlobServer();
});
afterAll(() => server?.close());
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'drover-outputs-'));
  workspace = path.join(root, 'workspace');
  fs.mkdirSync(workspace);
  fs.writeFileSync(path.join(workspace, 'out.txt'), 'the result\n');
  fs.writeFileSync(path.join(root, 'secret.txt'), 'not yours');
  server.reset();
  api = fakeApi(server);
  lines = [];
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const deliver = (output: Record<string, string>, signal = new AbortController().signal) =>
  deliverOutputFiles({
    jobId: 'job-1',
    output,
    workspace,
    api,
    signal,
    log: (text) => lines.push(text),
    backoff: new Backoff({ baseMs: 1, capMs: 1, random: () => 0 }),
  });

describe('deliverOutputFiles', () => {
  it('uploads a file: output and replaces it by a FileRef, keeping the other values', async () => {
    const result = await deliver({ report: 'file:out.txt', plain: 'kept', notafile: 'files:x' });
    const id = api.completed[0]!;
    expect(result).toEqual({
      output: { report: { __type: 'FileRef', id }, plain: 'kept', notafile: 'files:x' },
      problems: [],
      bytes: 11,
    });
    expect(server.uploads.get(id)?.toString()).toBe('the result\n');
    expect(api.created).toEqual([
      { filename: 'out.txt', contentType: 'text/plain', size: 11, sha256: sha256('the result\n') },
    ]);
    expect(lines[0]).toBe('uploading output `report`: out.txt (11 B)');
    expect(lines[1]).toMatch(new RegExp(`^output \`report\` uploaded as file ${id} \\(11 B, `));
  });

  it('refuses a path outside the workspace without any call, and leaves the key out', async () => {
    fs.symlinkSync(path.join(root, 'secret.txt'), path.join(workspace, 'link'));
    const result = await deliver({
      a: 'file:../secret.txt',
      b: `file:${path.join(root, 'secret.txt')}`,
      c: 'file:link',
    });
    expect(result.output).toEqual({});
    expect(result.problems).toEqual([
      'output `a` (file:../secret.txt) is outside the job workspace; it was not uploaded',
      `output \`b\` (file:${path.join(root, 'secret.txt')}) is outside the job workspace; it was not uploaded`,
      'output `c` (file:link) is outside the job workspace (after following symbolic links); it was not uploaded',
    ]);
    expect(api.created).toEqual([]);
    expect(server.requests).toEqual([]);
  });

  it('reports a missing file and a directory', async () => {
    fs.mkdirSync(path.join(workspace, 'dir'));
    const result = await deliver({ a: 'file:nope.txt', b: 'file:dir' });
    expect(result.problems).toEqual([
      'output `a` (file:nope.txt) does not exist; it was not uploaded',
      'output `b` (file:dir) is a directory; it was not uploaded',
    ]);
  });

  it('retries a failed PUT and an unreachable coordinator, then succeeds', async () => {
    server.script.push(500);
    api.createErrors.push(new TransferError('retry', 'creating the file record: Cannot reach the coordinator'));
    const result = await deliver({ report: 'file:out.txt' });
    expect(result.problems).toEqual([]);
    expect(result.output.report).toEqual({ __type: 'FileRef', id: api.completed[0] });
    expect(api.created).toHaveLength(2);
    expect(lines.filter((l) => l.includes('trying again'))).toHaveLength(2);
  });

  it('waits out a coordinator that does not answer (a restart) past its attempts, saying so once', async () => {
    for (let i = 0; i < 8; i++) {
      api.createErrors.push(
        new TransferError('retry', 'creating the file record: Cannot reach the coordinator at x: connection refused', {
          coordinatorAway: true,
        }),
      );
    }
    const result = await deliver({ report: 'file:out.txt' });
    expect(result.problems).toEqual([]);
    expect(result.output.report).toEqual({ __type: 'FileRef', id: api.completed[0] });
    expect(lines.filter((l) => l.includes('the coordinator does not answer: trying again until it does'))).toHaveLength(
      1,
    );
    // The job's end (its timeout, the shutdown) still ends the wait.
    const stop = new AbortController();
    for (let i = 0; i < 100_000; i++)
      api.createErrors.push(new TransferError('retry', 'away', { coordinatorAway: true }));
    setTimeout(() => stop.abort('timed out'), 50);
    const stopped = await deliver({ report: 'file:out.txt' }, stop.signal);
    expect(stopped.output).toEqual({});
  });

  it('does not retry a final refusal, and gives up after its attempts', async () => {
    api.createErrors.push(
      new TransferError('final', 'creating the file record: the coordinator answered HTTP 422: too big'),
    );
    const refused = await deliver({ report: 'file:out.txt' });
    expect(refused.problems).toEqual([
      'output `report` (file:out.txt) could not be uploaded: creating the file record: the coordinator answered HTTP 422: too big',
    ]);
    expect(api.created).toHaveLength(0);
    server.script.push(503, 503, 503, 503, 503);
    const exhausted = await deliver({ report: 'file:out.txt' });
    expect(exhausted.problems[0]).toContain('the upload was refused (HTTP 503: scripted 503)');
    expect(api.created).toHaveLength(5);
  });

  it('uploads nothing once the job is stopped', async () => {
    const stop = new AbortController();
    stop.abort('cancelled: the agent was stopped at once');
    const result = await deliver({ report: 'file:out.txt' }, stop.signal);
    expect(result).toEqual({
      output: {},
      problems: ['output `report` (file:out.txt) was not uploaded: cancelled: the agent was stopped at once'],
      bytes: 0,
    });
    expect(server.requests).toEqual([]);
  });

  it('streams an empty file and a file of several megabytes', async () => {
    fs.writeFileSync(path.join(workspace, 'empty'), '');
    const big = Buffer.alloc(3 * 1024 * 1024 + 7, 'x');
    fs.writeFileSync(path.join(workspace, 'big.bin'), big);
    const result = await deliver({ e: 'file:empty', b: 'file:big.bin' });
    expect(result.problems).toEqual([]);
    expect(server.uploads.get(api.completed[0]!)?.length).toBe(0);
    expect(sha256(server.uploads.get(api.completed[1]!)!)).toBe(sha256(big));
  });
});
