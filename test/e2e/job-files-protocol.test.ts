import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollTestAgent, workflow, type TestAgent } from '../helpers/agent.js';
import { startTestCoordinator, type TestCoordinator } from '../helpers/coordinator.js';
import type { ApiClient } from '../helpers/http.js';
import { finishBody } from '../helpers/jobs.js';
import { openAgentStream } from '../helpers/sse.js';
import { defaultBindingId, sha256, uploadFile } from '../helpers/storage.js';
import { issueApiToken, type Grant } from '../helpers/tokens.js';

/**
 * Files in jobs at the protocol level (docs/agent-protocol.md §6.5, docs/trigger-runs.md): the
 * checks of input FileRefs at the trigger run, the download URLs injected into `job` events, and
 * the agent's signed file endpoints, driven by a test agent making signed requests itself. The
 * same flows with the real agent daemon are in job-files.test.ts.
 */

const MAX_FILE_BYTES = 1024 * 1024;
const UNKNOWN = '0b6c3c5e-1f9b-4e0e-9a0e-2f6f3b8d8d11';
const ref = (id: string, extra: Record<string, unknown> = {}) => ({ __type: 'FileRef', id, ...extra });

let t: TestCoordinator;
let agent: TestAgent;
let other: TestAgent;
let triggerId: string;
let bindingId: string;
/** trigger grant + storage read/write on every binding. */
let runner: ApiClient;
/** trigger grant + storage `write` only on the default binding. */
let writeOnly: ApiClient;
/** trigger grant only. */
let noStorage: ApiClient;
/** storage read + delete (a caller fetching outputs, deleting inputs). */
let reader: ApiClient;

beforeAll(async () => {
  t = await startTestCoordinator({ env: { DROVER_MAX_FILE_BYTES: String(MAX_FILE_BYTES) } });
  agent = await enrollTestAgent(t.owner, t.orgId);
  other = await enrollTestAgent(t.owner, t.orgId);
  const params = [
    { name: 'bundle', type: 'file', required: true },
    { name: 'extra', type: 'file' },
    { name: 'note', type: 'string', default: 'hi' },
  ] as const;
  const put = await agent.putWorkflows([workflow('consume', { paramsSchema: [...params] })]);
  expect(put.status, put.text).toBe(200);
  expect(put.body.workflows[0].paramsSchema).toEqual(params);
  const trigger = await t.owner.post(`/orgs/${t.orgId}/triggers`, {
    body: {
      name: 'consume',
      agentId: agent.agentId,
      scopeType: 'workflow',
      workflowName: 'consume',
      responseMode: 'async',
    },
  });
  expect(trigger.status, trigger.text).toBe(201);
  triggerId = trigger.body.id;
  bindingId = await defaultBindingId(t);
  const client = async (grants: Grant[]) => t.api.withToken((await issueApiToken(t.owner, t.orgId, grants)).token);
  const runGrant: Grant = { type: 'trigger', triggerIds: [triggerId] };
  runner = await client([runGrant, { type: 'storage', bindingIds: null, permissions: ['read', 'write'] }]);
  writeOnly = await client([runGrant, { type: 'storage', bindingIds: [bindingId], permissions: ['write'] }]);
  noStorage = await client([runGrant]);
  reader = await client([{ type: 'storage', bindingIds: [bindingId], permissions: ['read', 'delete'] }]);
});
afterAll(() => t?.close());

const run = (client: ApiClient, params: Record<string, unknown>) =>
  client.post(`/triggers/${triggerId}/run`, { body: { params } });

async function jobCount(): Promise<number> {
  const res = await t.owner.get(`/orgs/${t.orgId}/jobs?limit=200`);
  return res.body.length;
}

/** A job for `agent` with one input file (through a real trigger run). */
async function jobWithInput(data = 'input data\n') {
  const { fileId } = await uploadFile(runner, data, { cleanupRule: 'persistent', filename: 'in.txt' });
  const res = await run(runner, { bundle: ref(fileId) });
  expect(res.status, res.text).toBe(202);
  return { jobId: res.body.jobId as string, fileId, data };
}

describe('input FileRefs at the trigger run', () => {
  it('accepts an active file the token can read and stores it without a URL', async () => {
    const { fileId } = await uploadFile(runner, 'abc', { cleanupRule: 'persistent', filename: 'a.txt' });
    const res = await run(runner, { bundle: ref(fileId, { downloadUrl: 'https://caller.example/x' }) });
    expect(res.status, res.text).toBe(202);
    const job = await t.owner.get(`/jobs/${res.body.jobId}`);
    expect(job.body.params).toEqual({ bundle: { __type: 'FileRef', id: fileId }, note: 'hi' });
  });

  it('answers 422 naming the parameter for an unknown file, a pending one and a deleted one, creating no job', async () => {
    const before = await jobCount();
    const unknown = await run(runner, { bundle: ref(UNKNOWN) });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toMatchObject({
      statusCode: 422,
      code: 'validation_failed',
      details: [{ path: 'body.params.bundle', message: expect.stringContaining(`file ${UNKNOWN} not found`) }],
    });
    const presign = await runner.post('/storage/files/presign-upload', { body: { cleanupRule: 'persistent' } });
    const pending = await run(runner, { bundle: ref(presign.body.fileId) });
    expect(pending.status).toBe(422);
    expect(pending.body.details[0].message).toContain('is pending; only an active file');
    const { fileId } = await uploadFile(runner, 'gone');
    expect((await reader.delete(`/storage/files/${fileId}`)).status).toBe(200);
    const deleted = await run(runner, { bundle: ref(fileId) });
    expect(deleted.status).toBe(422);
    expect(deleted.body.details[0].message).toContain('is deleted');
    expect(await jobCount()).toBe(before);
  });

  it('answers 403 when the token sees the file but lacks read, and 422 when it has no storage grant', async () => {
    const { fileId } = await uploadFile(runner, 'x');
    const refused = await run(writeOnly, { bundle: ref(fileId) });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      statusCode: 403,
      code: 'forbidden',
      message: expect.stringContaining('`read`'),
    });
    const hidden = await run(noStorage, { bundle: ref(fileId) });
    expect(hidden.status).toBe(422);
    expect(hidden.body.details[0]).toMatchObject({ path: 'body.params.bundle' });
    expect(hidden.body.message).not.toContain('pending');
  });

  it.each([
    ['a string instead of a FileRef', { bundle: UNKNOWN }, 'body.params.bundle', 'must be a FileRef'],
    ['an id that is not a UUID', { bundle: ref('../etc/passwd') }, 'body.params.bundle', 'must be a file id'],
    ['an unknown key', { bundle: ref(UNKNOWN, { path: '/etc/passwd' }) }, 'body.params.bundle', 'unknown key `path`'],
    ['a huge id', { bundle: ref('x'.repeat(100_000)) }, 'body.params.bundle', 'must be a file id'],
    ['no file at all', { note: 'x' }, 'body.params.bundle', 'is required'],
    // A workflow that declares its params takes no other (a FileRef there is a FileRef on a
    // parameter of no `type: file`, which a workflow without a schema refuses too: file-refs.test.ts).
    [
      'a FileRef on an undeclared parameter',
      { bundle: ref(UNKNOWN), loose: ref(UNKNOWN) },
      'body.params.loose',
      'is not a parameter of this workflow',
    ],
    [
      'a FileRef nested in a string parameter',
      { bundle: ref(UNKNOWN), note: [{ f: ref(UNKNOWN) }] },
      'body.params.note',
      'must be a string',
    ],
  ])('refuses %s with 422', async (_name, params, path, message) => {
    const res = await run(runner, params);
    expect(res.status, res.text).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.details).toContainEqual({ path, message: expect.stringContaining(message) });
  });
});

describe('download URLs in job events', () => {
  it('gives each input FileRef a fresh URL, size, SHA-256 and filename at every send, the URL serving the bytes', async () => {
    const { jobId, fileId, data } = await jobWithInput('bytes for the agent\n');
    for (let send = 0; send < 2; send++) {
      const stream = await openAgentStream(t.url, agent);
      let assignment: Record<string, any>;
      do assignment = await stream.nextJob();
      while (assignment.jobId !== jobId);
      stream.close();
      expect(assignment.params.bundle).toEqual({
        __type: 'FileRef',
        id: fileId,
        downloadUrl: expect.stringContaining(`/v1/storage/blobs/${fileId}?`),
        expiresInSeconds: 900,
        size: data.length,
        sha256: sha256(data),
        filename: 'in.txt',
        contentType: 'application/octet-stream',
      });
      const got = await fetch(assignment.params.bundle.downloadUrl);
      expect(got.status).toBe(200);
      expect(await got.text()).toBe(data);
    }
    expect((await t.owner.get(`/jobs/${jobId}`)).body.params.bundle).toEqual({ __type: 'FileRef', id: fileId });
  });

  it('sends a FileRef without a URL once its file is gone, and the input endpoint says so', async () => {
    const { jobId, fileId } = await jobWithInput();
    expect((await reader.delete(`/storage/files/${fileId}`)).status).toBe(200);
    const stream = await openAgentStream(t.url, agent);
    let assignment: Record<string, any>;
    do assignment = await stream.nextJob();
    while (assignment.jobId !== jobId);
    stream.close();
    expect(assignment.params.bundle).toEqual({ __type: 'FileRef', id: fileId });
    const fresh = await agent.request('GET', `/v1/agent/jobs/${jobId}/inputs/${fileId}`);
    expect(fresh.status).toBe(404);
    expect(fresh.body.message).toBe(`Input file ${fileId} is no longer available (it was deleted or expired)`);
  });
});

describe('GET /v1/agent/jobs/:jobId/inputs/:fileId', () => {
  it('answers a fresh URL for an input of the agent’s open job, and refuses everything else', async () => {
    const { jobId, fileId, data } = await jobWithInput();
    const fresh = await agent.request('GET', `/v1/agent/jobs/${jobId}/inputs/${fileId}`);
    expect(fresh.status, fresh.text).toBe(200);
    expect(fresh.body).toEqual({
      downloadUrl: expect.any(String),
      expiresInSeconds: 900,
      size: data.length,
      sha256: sha256(data),
      filename: 'in.txt',
      contentType: 'application/octet-stream',
    });
    expect((await other.request('GET', `/v1/agent/jobs/${jobId}/inputs/${fileId}`)).status).toBe(404);
    const { fileId: notInput } = await uploadFile(runner, 'other');
    expect((await agent.request('GET', `/v1/agent/jobs/${jobId}/inputs/${notInput}`)).status).toBe(404);
    expect((await agent.request('GET', `/v1/agent/jobs/${jobId}/inputs/not-a-uuid`)).status).toBe(404);
    const unsigned = await fetch(`${t.url}/v1/agent/jobs/${jobId}/inputs/${fileId}`);
    expect(unsigned.status).toBe(401);
    await agent.request('POST', `/v1/agent/jobs/${jobId}/finish`, finishBody());
    const finished = await agent.request('GET', `/v1/agent/jobs/${jobId}/inputs/${fileId}`);
    expect(finished.status).toBe(409);
    expect(finished.body).toMatchObject({ code: 'conflict', details: { jobId, status: 'success' } });
  });
});

describe('output files through the agent endpoints', () => {
  const create = (jobId: string, body: unknown, who: TestAgent = agent) =>
    who.request('POST', `/v1/agent/jobs/${jobId}/files`, body);
  const complete = (jobId: string, fileId: string, who: TestAgent = agent) =>
    who.request('POST', `/v1/agent/jobs/${jobId}/files/${fileId}/complete`);
  const declare = (data: string, extra: Record<string, unknown> = {}) => ({
    filename: 'out.txt',
    contentType: 'text/plain',
    size: Buffer.byteLength(data),
    sha256: sha256(data),
    ...extra,
  });

  it('creates, uploads and completes an output file; the finished job carries a FileRef a token can download', async () => {
    const { jobId } = await jobWithInput();
    const data = 'the output\n';
    const created = await create(jobId, declare(data));
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      fileId: expect.any(String),
      uploadUrl: expect.stringContaining(`/v1/storage/blobs/${created.body.fileId}?`),
      method: 'PUT',
      headers: expect.any(Object),
      expiresInSeconds: 900,
    });
    const put = await fetch(created.body.uploadUrl, { method: 'PUT', headers: created.body.headers, body: data });
    expect(put.status).toBe(200);
    const done = await complete(jobId, created.body.fileId);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({
      id: created.body.fileId,
      bindingId,
      filename: 'out.txt',
      contentType: 'text/plain',
      size: data.length,
      status: 'active',
      cleanupRule: 'ttl',
      expiresAt: expect.any(String),
    });
    expect(done.body.jobId).toBeUndefined();
    expect((await complete(jobId, created.body.fileId)).status).toBe(200);

    const finish = await agent.request(
      'POST',
      `/v1/agent/jobs/${jobId}/finish`,
      finishBody({ output: { report: ref(created.body.fileId), n: '1' } }),
    );
    expect(finish.status, finish.text).toBe(200);
    const job = await t.owner.get(`/jobs/${jobId}`);
    expect(job.body.output).toEqual({ report: { __type: 'FileRef', id: created.body.fileId }, n: '1' });
    const url = await reader.get(`/storage/files/${created.body.fileId}/download-url`);
    expect(url.status, url.text).toBe(200);
    expect(await (await fetch(url.body.downloadUrl)).text()).toBe(data);
  });

  it('leaves out of the output a FileRef that is not an active output of this job', async () => {
    const { jobId: first } = await jobWithInput();
    const { jobId: second, fileId: input } = await jobWithInput();
    const data = 'of the first job';
    const created = await create(first, declare(data));
    await fetch(created.body.uploadUrl, { method: 'PUT', headers: created.body.headers, body: data });
    expect((await complete(first, created.body.fileId)).status).toBe(200);
    const pending = await create(second, declare('never uploaded'));
    const finish = await agent.request(
      'POST',
      `/v1/agent/jobs/${second}/finish`,
      finishBody({
        output: {
          stolen: ref(created.body.fileId),
          input: ref(input),
          unknown: ref(UNKNOWN),
          pending: ref(pending.body.fileId),
          broken: { __type: 'FileRef', id: 7 },
          kept: 'yes',
        },
      }),
    );
    expect(finish.status, finish.text).toBe(200);
    expect((await t.owner.get(`/jobs/${second}`)).body.output).toEqual({ kept: 'yes' });
  });

  it('refuses a completion whose bytes differ from what was announced, and drops the file', async () => {
    const { jobId } = await jobWithInput();
    const created = await create(jobId, declare('twelve bytes'));
    expect((await complete(jobId, created.body.fileId)).status).toBe(409);
    await fetch(created.body.uploadUrl, { method: 'PUT', headers: created.body.headers, body: 'short' });
    const mismatch = await complete(jobId, created.body.fileId);
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.code).toBe('validation_failed');
    expect((await reader.get(`/storage/files/${created.body.fileId}`)).body.status).toBe('deleted');

    // More bytes than announced: the upload itself is refused, saying so.
    const small = await create(jobId, declare('abc'));
    const over = await fetch(small.body.uploadUrl, { method: 'PUT', headers: small.body.headers, body: 'abcdef' });
    expect(over.status).toBe(413);
    expect(((await over.json()) as { message: string }).message).toBe(
      'The file is larger than the 3 bytes its upload announced',
    );
  });

  it.each([
    ['an unknown field', { ...{ filename: 'a', size: 1, sha256: 'a'.repeat(64) }, owner: 'x' }],
    ['no sha256', { filename: 'a', size: 1 }],
    ['an uppercase sha256', { filename: 'a', size: 1, sha256: 'A'.repeat(64) }],
    ['a negative size', { filename: 'a', size: -1, sha256: 'a'.repeat(64) }],
    ['a size as a string', { filename: 'a', size: '1', sha256: 'a'.repeat(64) }],
    ['a size over DROVER_MAX_FILE_BYTES', { filename: 'a', size: MAX_FILE_BYTES + 1, sha256: 'a'.repeat(64) }],
    ['an empty filename', { filename: '', size: 1, sha256: 'a'.repeat(64) }],
    ['a huge filename', { filename: 'f'.repeat(100_000), size: 1, sha256: 'a'.repeat(64) }],
    ['a filename with a control character', { filename: 'a\u0007b', size: 1, sha256: 'a'.repeat(64) }],
    ['no body', undefined],
  ])('refuses %s with 422', async (_name, body) => {
    const { jobId } = await jobWithInput();
    const res = await create(jobId, body);
    expect(res.status, res.text).toBe(422);
    expect(res.body).toMatchObject({ statusCode: 422, code: 'validation_failed', details: expect.any(Array) });
  });

  it('refuses a job that is not the agent’s (404), a finished one (409) and an unsigned call (401)', async () => {
    const { jobId } = await jobWithInput();
    expect((await create(UNKNOWN, declare('x'))).status).toBe(404);
    expect((await create(jobId, declare('x'), other)).status).toBe(404);
    const unsigned = await fetch(`${t.url}/v1/agent/jobs/${jobId}/files`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(declare('x')),
    });
    expect(unsigned.status).toBe(401);
    const created = await create(jobId, declare('x'));
    expect((await complete(jobId, created.body.fileId, other)).status).toBe(404);
    expect((await complete(jobId, UNKNOWN)).status).toBe(404);
    await agent.request('POST', `/v1/agent/jobs/${jobId}/finish`, finishBody());
    const late = await create(jobId, declare('x'));
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ code: 'conflict', details: { jobId, status: 'success' } });
  });
});
