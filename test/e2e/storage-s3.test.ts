import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemonRig, type DaemonRig } from '../helpers/agent-daemon.js';
import { enrollTestAgent } from '../helpers/agent.js';
import type { ApiClient } from '../helpers/http.js';
import { bindDevices, createApp, release } from '../helpers/ota.js';
import { eventually } from '../helpers/poll.js';
import { S3_KEYS, TestS3 } from '../helpers/s3.js';
import { defaultBindingId, sha256, storageClient, uploadFile, type PresignedUpload } from '../helpers/storage.js';
import { issueApiToken } from '../helpers/tokens.js';

const run = promisify(execFile);

/**
 * Files in an S3-compatible bucket (docs/storage.md, "Where files are kept"): a real coordinator
 * whose own storage is a bucket of an S3-compatible server on loopback (DROVER_STORAGE_URL), a
 * binding of backend `s3` on a bucket of its own, presigned URLs used by plain curl straight
 * against the store, a real agent exchanging job files with it, an OTA manifest pointing at it,
 * and an outage of the store.
 */
const MAX_FILE_BYTES = 1_000_000;

describe('files in an S3-compatible bucket', () => {
  const s3 = new TestS3(['drover-files', 'team-bucket']);
  let rig: DaemonRig;
  let client: ApiClient;
  let defaultBinding: string;

  beforeAll(async () => {
    await s3.start();
    rig = await startDaemonRig({
      workPrefix: 'drover-s3-',
      env: {
        ...s3.storageEnv('drover-files', 'coordinator'),
        ...s3.bindingEnv(),
        DROVER_MAX_FILE_BYTES: String(MAX_FILE_BYTES),
      },
      workflows: () => ({
        roundtrip: [
          'name: roundtrip',
          'params:',
          '  - {name: input, type: file, required: true}',
          'steps:',
          '  - run: |',
          '      tr a-z A-Z < "$DROVER_PARAM_INPUT" > upper.txt',
          '      echo "result=file:upper.txt" >> "$DROVER_OUTPUT"',
          '    shell: true',
        ],
      }),
    });
    client = await storageClient(rig.t, null, ['read', 'write', 'delete']);
    defaultBinding = await defaultBindingId(rig.t);
  }, 120_000);
  afterAll(async () => {
    await rig?.close();
    await s3.close();
  });

  const work = () => rig.work;
  const presign = async (body: Record<string, unknown>) => {
    const res = await client.post<PresignedUpload>('/storage/files/presign-upload', {
      body: { bindingId: defaultBinding, ...body },
    });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  /** A PUT with curl to the presigned URL, with the headers presign-upload named. */
  const curlPut = async (upload: PresignedUpload, file: string) => {
    const headers = Object.entries(upload.headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
    const { stdout } = await run('curl', [
      '-sS',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-X',
      'PUT',
      '-T',
      file,
      ...headers,
      upload.uploadUrl,
    ]);
    return Number(stdout);
  };

  it("keeps the default binding's files in the bucket: curl uploads and downloads straight from the store", async () => {
    const data = 'hello from the bucket\n'.repeat(1000);
    const local = path.join(work(), 'hello.txt');
    fs.writeFileSync(local, data);
    const upload = await presign({ cleanupRule: 'persistent', filename: 'hello.txt', contentType: 'text/plain' });
    expect(upload.uploadUrl.startsWith(`${s3.endpoint}/drover-files/coordinator/`)).toBe(true);
    expect(upload.headers).toEqual({ 'content-type': 'text/plain' });
    expect(await curlPut(upload, local)).toBe(200);
    const done = await client.post(`/storage/files/${upload.fileId}/complete`);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ id: upload.fileId, status: 'active', size: data.length });
    const key = `coordinator/${upload.fileId.slice(0, 2)}/${upload.fileId}`;
    expect(s3.objectKeys('drover-files')).toContain(key);

    const url = await client.get<{ downloadUrl: string }>(`/storage/files/${upload.fileId}/download-url`);
    expect(url.body.downloadUrl.startsWith(`${s3.endpoint}/drover-files/${key}?`)).toBe(true);
    const out = path.join(work(), 'hello.down');
    const { stdout } = await run('curl', ['-sS', '-D', '-', '-o', out, url.body.downloadUrl]);
    expect(stdout).toMatch(/^HTTP\/1\.1 200/);
    expect(stdout.toLowerCase()).toContain('content-disposition: attachment; filename="hello.txt"');
    expect(sha256(fs.readFileSync(out))).toBe(sha256(data));

    const deleted = await client.delete(`/storage/files/${upload.fileId}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect(s3.objectKeys('drover-files')).not.toContain(key);
  });

  it('refuses to complete a file not uploaded yet (409), and drops one over the size limit (413)', async () => {
    const empty = await presign({ cleanupRule: 'persistent' });
    const early = await client.post(`/storage/files/${empty.fileId}/complete`);
    expect(early.status).toBe(409);
    expect((await client.get(`/storage/files/${empty.fileId}`)).body.status).toBe('pending');

    const big = path.join(work(), 'big.bin');
    fs.writeFileSync(big, Buffer.alloc(MAX_FILE_BYTES + 1, 7));
    const upload = await presign({ cleanupRule: 'persistent', contentType: 'application/octet-stream' });
    // The store takes what its URL is sent; the coordinator applies its limit at complete.
    expect(await curlPut(upload, big)).toBe(200);
    const refused = await client.post(`/storage/files/${upload.fileId}/complete`);
    expect(refused.status).toBe(413);
    expect(refused.body).toMatchObject({ code: 'payload_too_large' });
    expect(refused.body.message).toContain(`${MAX_FILE_BYTES + 1} bytes`);
    expect(s3.objectKeys('drover-files').some((k) => k.endsWith(upload.fileId))).toBe(false);
  });

  it('answers 503 while the store is down and keeps the file pending; complete succeeds once it is back', async () => {
    const { fileId, upload } = await (async () => {
      const up = await presign({ cleanupRule: 'ttl', ttlSeconds: 3600 });
      const local = path.join(work(), 'outage.txt');
      fs.writeFileSync(local, 'written before the outage');
      expect(await curlPut(up, local)).toBe(200);
      return { fileId: up.fileId, upload: up };
    })();
    await s3.stop();
    try {
      const down = await client.post(`/storage/files/${fileId}/complete`);
      expect(down.status).toBe(503);
      expect(down.body).toMatchObject({ statusCode: 503, code: 'storage_unavailable' });
      expect(down.headers.get('retry-after')).toBe('5');
      expect(down.text).not.toContain('drover-files');
      expect((await client.get(`/storage/files/${fileId}`)).body.status).toBe('pending');
    } finally {
      await s3.start();
    }
    const back = await client.post(`/storage/files/${fileId}/complete`);
    expect(back.status, back.text).toBe(200);
    expect(back.body).toMatchObject({ status: 'active', size: 'written before the outage'.length });
    expect(upload.uploadUrl).toContain(String(s3.port));
  });

  it('keeps the files of an s3 binding in its own bucket, under drover/', async () => {
    const created = await rig.t.owner.post(`/orgs/${rig.t.orgId}/storage-bindings`, {
      body: {
        name: 'team bucket',
        backend: 's3',
        endpoint: s3.endpoint,
        bucket: 'team-bucket',
        region: 'us-east-1',
        ...S3_KEYS,
        forcePathStyle: true,
      },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).not.toHaveProperty('secretAccessKey');
    const { fileId, file } = await uploadFile(client, 'team data', {
      bindingId: created.body.id,
      cleanupRule: 'persistent',
    });
    expect(file).toMatchObject({ bindingId: created.body.id, size: 9, status: 'active' });
    expect(s3.objectKeys('team-bucket')).toEqual([`drover/${fileId.slice(0, 2)}/${fileId}`]);
    const url = await client.get<{ downloadUrl: string }>(`/storage/files/${fileId}/download-url`);
    expect(url.body.downloadUrl.startsWith(`${s3.endpoint}/team-bucket/drover/`)).toBe(true);
    expect(await (await fetch(url.body.downloadUrl)).text()).toBe('team data');
  });

  it('gives a real agent its input file from the bucket and keeps its output file there', async () => {
    const { fileId } = await uploadFile(client, 'shout this', {
      bindingId: defaultBinding,
      cleanupRule: 'persistent',
      filename: 'in.txt',
    });
    const trigger = await rig.t.owner.post(`/orgs/${rig.t.orgId}/triggers`, {
      body: {
        name: 'roundtrip',
        agentId: rig.a.agentId,
        scopeType: 'workflow',
        workflowName: 'roundtrip',
        responseMode: 'async',
      },
    });
    expect(trigger.status, trigger.text).toBe(201);
    const token = await issueApiToken(rig.t.owner, rig.t.orgId, [
      { type: 'trigger', triggerIds: [trigger.body.id] },
      { type: 'storage', bindingIds: null, permissions: ['read', 'write'] },
    ]);
    const runRes = await rig.t.api.post(`/triggers/${trigger.body.id}/run`, {
      token: token.token,
      body: { params: { input: { __type: 'FileRef', id: fileId } } },
    });
    expect(runRes.status, runRes.text).toBe(202);
    rig.jobIds.push(runRes.body.jobId);
    const job = await eventually(
      async () => {
        const view = await rig.t.owner.get(`/jobs/${runRes.body.jobId}`);
        return ['success', 'failed'].includes(view.body.status) ? view.body : null;
      },
      30_000,
      'the job to end',
    );
    expect(job.status, JSON.stringify(job.logs)).toBe('success');
    const output = job.output.result as { __type: string; id: string };
    expect(output.__type).toBe('FileRef');
    expect(s3.objectKeys('drover-files')).toContain(`coordinator/${output.id.slice(0, 2)}/${output.id}`);
    const url = await client.get<{ downloadUrl: string }>(`/storage/files/${output.id}/download-url`);
    expect(await (await fetch(url.body.downloadUrl)).text()).toBe('SHOUT THIS');
  });

  it("signs OTA manifests whose download URL points at the bucket, and the artifact's checksum holds", async () => {
    const artifactData = 'release 1.0 artifact bytes';
    const { fileId: artifact } = await uploadFile(client, artifactData, {
      bindingId: defaultBinding,
      cleanupRule: 'persistent',
    });
    const app = await createApp(rig.t.owner, rig.t.orgId, { slug: 's3-app' });
    await release(rig.t.owner, rig.t.orgId, app.id, { version: '1.0', artifactFileId: artifact });
    const device = await enrollTestAgent(rig.t.owner, rig.t.orgId);
    await bindDevices(rig.t.owner, rig.t.orgId, app.id, [device.agentId]);
    const desired = await device.request('GET', '/v1/agent/deploy/desired');
    expect(desired.status, desired.text).toBe(200);
    const target = desired.body.apps[0].payload.desired;
    expect(target.download_url.startsWith(`${s3.endpoint}/drover-files/coordinator/`)).toBe(true);
    const body = await (await fetch(target.download_url)).text();
    expect(body).toBe(artifactData);
    expect(sha256(body)).toBe(target.checksum_sha256);
  });
});
