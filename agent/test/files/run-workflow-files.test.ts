import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fetchInputFiles } from '../../src/files/input-files.js';
import type { JobFileTransfer } from '../../src/files/job-file-transfer.js';
import { deliverOutputFiles } from '../../src/files/output-files.js';
import { Backoff } from '../../src/util/backoff.js';
import { runJob, sh, tempStateDir } from '../exec/helpers.js';
import { fakeApi, sha256, startBlobServer, type BlobServer, type FakeApi } from './blob-server.js';

const FILE_ID = '11111111-2222-4333-8444-555555555555';
const CONTENT = Buffer.from('input bytes\n');

let server: BlobServer;
let api: FakeApi;
let stateDir: string;
let transfer: JobFileTransfer;

beforeAll(async () => {
  server = await startBlobServer();
  server.blobs.set('in', CONTENT);
});
afterAll(() => server?.close());
beforeEach(() => {
  stateDir = tempStateDir();
  api = fakeApi(server);
  const backoff = () => new Backoff({ baseMs: 1, capMs: 1, random: () => 0 });
  transfer = {
    fetchInputs: (req) => fetchInputFiles({ ...req, api, backoff: backoff() }),
    deliverOutputs: (req) => deliverOutputFiles({ ...req, api, backoff: backoff() }),
  };
});
afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

const bundle = (extra: Record<string, unknown> = {}) => ({
  __type: 'FileRef',
  id: FILE_ID,
  downloadUrl: `${server.url}/blob/in`,
  size: CONTENT.length,
  sha256: sha256(CONTENT),
  filename: 'input.txt',
  ...extra,
});

describe('a job with files', () => {
  it('downloads its input before the first step, which reads it through DROVER_PARAM_<NAME> and params.json', async () => {
    const { result, out, plan } = await runJob(
      stateDir,
      [
        sh(
          'cat "$DROVER_PARAM_BUNDLE"; grep -c downloadUrl "$DROVER_PARAMS_FILE" || true; echo "who=$DROVER_PARAM_WHO"',
        ),
      ],
      { params: { bundle: bundle(), who: 'me' }, transfer },
    );
    expect(result).toMatchObject({ status: 'success', exitCode: 0 });
    expect(out).toEqual(['input bytes', '0', 'who=me']);
    const params = JSON.parse(fs.readFileSync(plan.files.paramsFile, 'utf8'));
    expect(params).toEqual({
      bundle: {
        __type: 'FileRef',
        id: FILE_ID,
        filename: 'input.txt',
        contentType: null,
        size: CONTENT.length,
        sha256: sha256(CONTENT),
        path: path.join(plan.files.workspace, 'inputs', 'bundle', 'input.txt'),
      },
      who: 'me',
    });
  });

  it('fails before any step runs when the input does not match its SHA-256', async () => {
    const { result, lines, out, plan } = await runJob(stateDir, [sh('echo step ran; touch ran')], {
      params: { bundle: bundle({ sha256: 'b'.repeat(64) }) },
      transfer,
    });
    expect(result).toMatchObject({ status: 'failed', exitCode: null });
    expect(result.errorMessage).toBe(
      `input file \`bundle\` (input.txt, file ${FILE_ID}) could not be downloaded: the download does not match its ` +
        `checksum: expected SHA-256 ${'b'.repeat(64)}, got ${sha256(CONTENT)}; no step was run`,
    );
    expect(out).toEqual([]);
    expect(fs.existsSync(path.join(plan.files.workspace, 'ran'))).toBe(false);
    expect(lines.map((l) => l.text)).not.toContainEqual(expect.stringContaining('step 1'));
    // params.json never holds the presigned URL.
    expect(fs.readFileSync(plan.files.paramsFile, 'utf8')).not.toContain('downloadUrl');
  });

  it('uploads a file: output and reports it as a FileRef', async () => {
    const { result } = await runJob(
      stateDir,
      [sh('echo result > out.txt; echo "report=file:out.txt" >> "$DROVER_OUTPUT"; echo "n=1" >> "$DROVER_OUTPUT"')],
      { transfer },
    );
    expect(result).toMatchObject({
      status: 'success',
      exitCode: 0,
      output: { report: { __type: 'FileRef', id: api.completed[0] }, n: '1' },
    });
    expect(server.uploads.get(api.completed[0]!)?.toString()).toBe('result\n');
  });

  it('fails a job that would succeed when an output names a file outside the workspace, and leaves it out', async () => {
    const { result, lines } = await runJob(
      stateDir,
      [sh('echo "leak=file:../params.json" >> "$DROVER_OUTPUT"; echo "ok=yes" >> "$DROVER_OUTPUT"')],
      { transfer },
    );
    expect(result).toMatchObject({
      status: 'failed',
      exitCode: null,
      errorMessage: 'output `leak` (file:../params.json) is outside the job workspace; it was not uploaded',
      output: { ok: 'yes' },
    });
    expect(api.created).toEqual([]);
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.text)).toEqual([
      'error: output `leak` (file:../params.json) is outside the job workspace; it was not uploaded',
    ]);
  });

  it('keeps the status of a failed job and still uploads the files it named', async () => {
    const { result } = await runJob(
      stateDir,
      [sh('echo log > build.log; echo "log=file:build.log" >> "$DROVER_OUTPUT"; exit 2')],
      {
        transfer,
      },
    );
    expect(result).toMatchObject({ status: 'failed', exitCode: 2, output: { log: { __type: 'FileRef' } } });
  });
});
