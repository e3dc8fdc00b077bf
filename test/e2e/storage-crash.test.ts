import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { coordinatorCli, killLeftoverCoordinators, type CoordinatorCli } from '../helpers/coordinator-cli.js';
import {
  makeTempDir,
  OWNER_EMAIL,
  OWNER_PASSWORD,
  databaseEnv,
  startTestCoordinator,
  type TestCoordinator,
} from '../helpers/coordinator.js';
import { ApiClient } from '../helpers/http.js';
import { rawRequest, sha256 } from '../helpers/storage.js';
import { issueApiToken } from '../helpers/tokens.js';
import { eventually } from '../helpers/poll.js';

/**
 * A coordinator killed (SIGKILL) in the middle of receiving an upload leaves no `active` file and
 * no partial blob: the bytes were going to a temp file, renamed into place only once whole and
 * synced, and the next start removes leftover temp files. The file stays `pending`; the same
 * upload URL works again after the restart (its key lives in the database).
 */

const BANNER = /Drover coordinator listening on (http:\/\/127\.0\.0\.1:\d+)/;

afterEach(() => {
  expect(killLeftoverCoordinators(), 'child processes left running').toEqual([]);
});

/** `drover-coordinator start` on `dataDir` in a child process; resolves with its URL once listening. */
async function startChild(dataDir: string): Promise<CoordinatorCli & { url: string }> {
  const started = coordinatorCli(['start', '--port', '0', '--data-dir', dataDir], {
    ...(await databaseEnv(dataDir)),
    DROVER_BOOTSTRAP_EMAIL: OWNER_EMAIL,
    DROVER_BOOTSTRAP_PASSWORD: OWNER_PASSWORD,
    DROVER_BOOTSTRAP_ORG: 'acme',
    DROVER_LOG_LEVEL: 'warn',
  });
  const [, url] = await started.waitFor(BANNER);
  return { ...started, url: url! };
}

const tmpFiles = (dataDir: string) => {
  const dir = path.join(dataDir, 'blobs', 'tmp');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
};

describe('a coordinator killed mid-upload', () => {
  let after: TestCoordinator | undefined;
  afterAll(() => after?.close());

  it('leaves the file pending with no blob, and accepts the upload again after a restart', async () => {
    const dataDir = makeTempDir();
    const first = await startChild(dataDir);
    const owner = await new ApiClient(`${first.url}/v1`).login(OWNER_EMAIL, OWNER_PASSWORD);
    const orgId = (await owner.get('/orgs')).body[0].id as string;
    const issued = await issueApiToken(owner, orgId, [
      { type: 'storage', bindingIds: null, permissions: ['read', 'write'] },
    ]);
    const client = owner.withToken(issued.token);
    const presign = await client.post('/storage/files/presign-upload', {
      body: { cleanupRule: 'persistent', filename: 'big.bin' },
    });
    expect(presign.status).toBe(201);
    const { fileId, uploadUrl } = presign.body as { fileId: string; uploadUrl: string };

    // Send the first megabyte of an announced 16 MiB body, then kill the server.
    const req = http.request(uploadUrl, { method: 'PUT', headers: { 'content-length': String(16 << 20) } });
    const failed = new Promise((resolve) => req.on('error', resolve));
    req.write(Buffer.alloc(1 << 20, 7));
    await eventually(() => tmpFiles(dataDir).length > 0, 10_000, 'the upload to reach a temp file');
    expect(tmpFiles(dataDir)).toHaveLength(1);
    first.child.kill('SIGKILL');
    await first.exited;
    await failed;

    // Nothing in place of the blob; the temp file is still there until the next start.
    expect(fs.existsSync(path.join(dataDir, 'blobs', fileId.slice(0, 2), fileId))).toBe(false);
    expect(tmpFiles(dataDir)).toHaveLength(1);

    after = await startTestCoordinator({ dataDir });
    expect(tmpFiles(dataDir)).toEqual([]);
    const again = after.api.withToken(issued.token);
    expect((await again.get(`/storage/files/${fileId}`)).body).toMatchObject({ status: 'pending', size: 0 });
    const early = await again.post(`/storage/files/${fileId}/complete`);
    expect(early.status).toBe(409);
    expect((await again.get(`/storage/files/${fileId}`)).body.status).toBe('pending');
    expect((await again.get('/storage/files?status=active')).body).toEqual([]);

    // The URL issued before the crash still works: the port changed, so aim it at the new server.
    const data = Buffer.alloc(64 * 1024, 9);
    const retry = uploadUrl.replace(first.url, after.url);
    const put = await rawRequest('PUT', retry, { chunks: [data] });
    expect(put.status, put.body.toString()).toBe(200);
    const done = await again.post(`/storage/files/${fileId}/complete`);
    expect(done.body).toMatchObject({ status: 'active', size: data.length });
    const url = (await again.get(`/storage/files/${fileId}/download-url`)).body.downloadUrl;
    expect(sha256((await rawRequest('GET', url)).body)).toBe(sha256(data));
  });
});
