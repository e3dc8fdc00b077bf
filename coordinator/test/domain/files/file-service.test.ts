import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FileCaller } from '../../../src/domain/files/access.js';
import { MAX_JOB_OUTPUT_FILES } from '../../../src/domain/files/file-service.js';
import type { StoragePermission } from '../../../src/domain/model/api-tokens.js';
import { AppError } from '../../../src/errors.js';
import { StorageUnavailableError } from '../../../src/storage/backend.js';
import { newId } from '../../../src/util/ids.js';
import { filesFixture, insertRelease, T0, type FilesFixture } from '../../storage/fixture.js';
import { TestS3 } from '../../../../test/helpers/s3.js';

const sha = (data: string) => createHash('sha256').update(data).digest('hex');

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected an AppError');
}

describe('files service', () => {
  let f: FilesFixture;
  beforeEach(async () => {
    f = await filesFixture({ DROVER_JOB_FILE_TTL_SECONDS: '3600', DROVER_MAX_FILE_BYTES: '1000' });
  });
  afterEach(() => f.close());

  const caller = (permissions: StoragePermission[] | null, bindingIds: string[] | null = null): FileCaller => ({
    orgId: f.orgId,
    scopes: permissions === null ? [] : [{ type: 'storage', bindingIds, permissions }],
    tokenId: newId(),
    userId: null,
  });
  const upload = async (fileId: string, data: string) => {
    const file = (await f.files.findInOrg(f.orgId, fileId))!;
    await f.service.local.receive(file.blobKey, Readable.from([Buffer.from(data)]), 10_000);
  };

  describe('lookupForToken (input FileRefs)', () => {
    it('finds an active file in the grant that the token may read', async () => {
      const file = await f.insertFile();
      expect(await f.service.lookupForToken(caller(['read']), file.id)).toEqual({ outcome: 'ok', file });
      expect((await f.service.lookupForToken(caller(['read'], [f.bindingId]), file.id)).outcome).toBe('ok');
    });

    it('does not see a file without a storage grant, outside the grant, or of another organization', async () => {
      const other = await f.addBinding('other');
      const file = await f.insertFile({ bindingId: other });
      expect(await f.service.lookupForToken(caller(null), file.id)).toEqual({ outcome: 'not_found' });
      expect(await f.service.lookupForToken(caller(['read'], [f.bindingId]), file.id)).toEqual({
        outcome: 'not_found',
      });
      expect(await f.service.lookupForToken({ ...caller(['read']), orgId: newId() }, file.id)).toEqual({
        outcome: 'not_found',
      });
      expect(await f.service.lookupForToken(caller(['read']), newId())).toEqual({ outcome: 'not_found' });
    });

    it('tells a grant without read and a file that is not active apart', async () => {
      const active = await f.insertFile();
      const pending = await f.insertFile({ status: 'pending', size: null, sha256: null });
      expect((await f.service.lookupForToken(caller(['write', 'delete']), active.id)).outcome).toBe('forbidden');
      expect((await f.service.lookupForToken(caller(['read']), pending.id)).outcome).toBe('not_active');
    });
  });

  it('gives the agent a fresh URL with size, hash and name of each active file, leaving out the others', async () => {
    const active = await f.insertFile({ filename: 'in.csv', size: 3, sha256: sha('abc') });
    const deleted = await f.insertFile({ status: 'deleted' });
    const downloads = await f.service.agentDownloads(f.orgId, [active.id, deleted.id, newId()]);
    expect([...downloads.keys()]).toEqual([active.id]);
    expect(downloads.get(active.id)).toEqual({
      downloadUrl: expect.stringMatching(
        new RegExp(
          `^https://drover\\.example\\.test/v1/storage/blobs/${active.id}\\?m=GET&exp=${Math.floor(T0 / 1000) + 900}&n=[A-Za-z0-9_-]{16}&sig=`,
        ),
      ),
      expiresInSeconds: 900,
      size: 3,
      sha256: sha('abc'),
      filename: 'in.csv',
      contentType: 'text/plain',
    });
    expect(await f.service.agentDownloads(f.orgId, [])).toEqual(new Map());
  });

  describe('job output files', () => {
    const jobId = newId();
    const announce = (over: object = {}) =>
      f.service.createJobOutputFile({
        orgId: f.orgId,
        jobId,
        filename: 'out.txt',
        size: 5,
        sha256: sha('hello'),
        ...over,
      });

    it('creates a pending ttl file of the job in the default binding, with an upload URL', async () => {
      await f.addBinding('another');
      const up = await announce({ contentType: 'text/plain' });
      expect(up).toMatchObject({ method: 'PUT', expiresInSeconds: 900, headers: { 'content-type': 'text/plain' } });
      expect(up.uploadUrl).toContain(`/v1/storage/blobs/${up.fileId}?m=PUT&`);
      expect(await f.files.findInOrg(f.orgId, up.fileId)).toMatchObject({
        bindingId: f.bindingId,
        status: 'pending',
        origin: 'agent',
        jobId,
        cleanupRule: 'ttl',
        ttlSeconds: 3600,
        declaredSize: 5,
        declaredSha256: sha('hello'),
        filename: 'out.txt',
      });
    });

    it('refuses a size over the limit, a malformed hash and a bad filename', async () => {
      expect((await refusal(announce({ size: 1001 }))).details).toEqual([
        { path: 'body.size', message: 'must be an integer from 0 to 1000 (the largest file), got 1001' },
      ]);
      expect((await refusal(announce({ sha256: 'ABC' }))).statusCode).toBe(422);
      expect((await refusal(announce({ filename: 'a\nb' }))).statusCode).toBe(422);
    });

    it('refuses with 409 the file past the most a job may make', async () => {
      for (let i = 1; i < MAX_JOB_OUTPUT_FILES; i++)
        await f.insertFile({ jobId, status: i % 2 ? 'active' : 'deleted' });
      await announce();
      const error = await refusal(announce());
      expect(error.statusCode).toBe(409);
      expect(error.message).toBe('The job has made 2048 output files, the most a job may make');
      // Another job's are its own.
      await f.service.createJobOutputFile({ orgId: f.orgId, jobId: newId(), filename: 'o', size: 1, sha256: sha('x') });
    });

    it('refuses with 409 when the organization has no default binding', async () => {
      f.db.prepare('UPDATE storage_bindings SET is_default = 0').run();
      expect((await refusal(announce())).statusCode).toBe(409);
    });

    it('completes a matching upload once, counting the TTL from completion', async () => {
      const up = await announce();
      expect((await refusal(f.service.completeJobOutputFile(f.orgId, jobId, up.fileId))).statusCode).toBe(409);
      await upload(up.fileId, 'hello');
      f.clock.advance(10_000);
      const done = await f.service.completeJobOutputFile(f.orgId, jobId, up.fileId);
      expect(done).toMatchObject({ status: 'active', size: 5, cleanupRule: 'ttl' });
      expect(done.expiresAt).toBe(new Date(T0 + 10_000 + 3600_000).toISOString());
      expect(await f.service.completeJobOutputFile(f.orgId, jobId, up.fileId)).toEqual(done);
      expect((await f.service.findActiveManyInOrg(f.orgId, [up.fileId]))[0]?.jobId).toBe(jobId);
    });

    it('drops an upload whose size or hash differ from what was announced', async () => {
      const up = await announce();
      await upload(up.fileId, 'HELLO');
      const error = await refusal(f.service.completeJobOutputFile(f.orgId, jobId, up.fileId));
      expect(error.statusCode).toBe(422);
      expect(error.message).toContain('not the announced 5 bytes');
      expect(await f.files.findInOrg(f.orgId, up.fileId)).toMatchObject({ status: 'deleted' });
      const blob = path.join(f.dataDir, 'blobs', up.fileId.slice(0, 2), up.fileId);
      expect(fs.existsSync(blob)).toBe(false);
    });

    it('does not complete the file of another job', async () => {
      const up = await announce();
      expect((await refusal(f.service.completeJobOutputFile(f.orgId, newId(), up.fileId))).statusCode).toBe(404);
      expect((await refusal(f.service.completeJobOutputFile(newId(), jobId, up.fileId))).statusCode).toBe(404);
    });
  });

  describe('delete', () => {
    it('refuses a file that a release which is not yanked references, with file_in_use', async () => {
      const file = await f.insertFile();
      insertRelease(f.db, f.orgId, file.id, 'published');
      const error = await refusal(f.service.delete(caller(['delete']), file.id));
      expect(error).toMatchObject({ statusCode: 409, code: 'file_in_use' });
    });

    it('records a failure of the store as delete_failed with the next retry, and logs it', async () => {
      const file = await f.insertFile();
      const blob = path.join(f.dataDir, 'blobs', file.id.slice(0, 2), file.id);
      fs.mkdirSync(path.join(blob, 'sub'), { recursive: true });
      const view = await f.service.delete(caller(['delete']), file.id);
      expect(view.status).toBe('delete_failed');
      expect(await f.files.findInOrg(f.orgId, file.id)).toMatchObject({
        deleteAttempts: 1,
        nextDeleteAt: new Date(T0 + 30_000).toISOString(),
      });
      expect(f.warnings).toHaveLength(1);
      fs.rmSync(blob, { recursive: true });
      f.clock.advance(30_000);
      expect(await f.service.sweepDue()).toBe(1);
      expect(await f.files.findInOrg(f.orgId, file.id)).toMatchObject({ status: 'deleted', lastDeleteError: null });
    });
  });

  it("presigns into an s3 binding's own bucket without asking the store, and answers 503 when complete cannot reach it", async () => {
    const s3 = await f.addBinding('bucket', 's3');
    const up = await f.service.presignUpload(caller(['write']), { cleanupRule: 'persistent', bindingId: s3 });
    const url = new URL(up.uploadUrl);
    // A staging object of its own, never the file's object (`complete` promotes it).
    expect(`${url.origin}${url.pathname}`).toMatch(
      new RegExp(`^http://127\\.0\\.0\\.1:9/team-bucket/drover/uploads/${up.fileId}/[0-9a-f]{24}$`),
    );
    expect(url.searchParams.get('X-Amz-Credential')).toMatch(/^AKIA0\/\d{8}\/eu-west-1\/s3\/aws4_request$/);
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('content-type;host');
    // Port 9 (discard) refuses the connection: the store is down.
    const error = await f.service.complete(caller(['write']), up.fileId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect(await f.files.findInOrg(f.orgId, up.fileId)).toMatchObject({ status: 'pending' });
  });
});

describe('files service, several coordinators on one bucket', () => {
  it('answers the completed file to a completion that lost the race to another coordinator', async () => {
    const s3 = new TestS3(['shared']);
    await s3.start();
    const f = await filesFixture({ DROVER_JOB_FILE_TTL_SECONDS: '3600', ...s3.bindingEnv() });
    try {
      await f.addDefaultBucket(s3.endpoint, 'shared');
      const jobId = newId();
      const up = await f.service.createJobOutputFile({
        orgId: f.orgId,
        jobId,
        filename: 'out.txt',
        size: 5,
        sha256: sha('hello'),
      });
      const put = await fetch(up.uploadUrl, { method: up.method, headers: up.headers, body: 'hello' });
      expect(put.status).toBe(200);
      // Another coordinator found the staged upload; as it checks the file is still pending (its
      // third look), this one completes it, removing the staged upload the other is to promote.
      let done: unknown;
      const other = await f.otherCoordinator(async (n, read) => {
        if (n !== 3) return read();
        const before = await read();
        done = await f.service.completeJobOutputFile(f.orgId, jobId, up.fileId);
        return before;
      });
      expect(await other.completeJobOutputFile(f.orgId, jobId, up.fileId)).toEqual(done);
      expect(done).toMatchObject({ status: 'active', size: 5 });
    } finally {
      f.close();
      await s3.close();
    }
  });
});
