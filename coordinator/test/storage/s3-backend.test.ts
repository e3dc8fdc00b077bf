import { describe, expect, it } from 'vitest';
import { bucketOrigin } from '../../src/config/storage-config.js';
import { S3Backend } from '../../src/storage/s3-backend.js';

const FILE = '0f6c2a52-5d7e-4c1e-9a51-1e4b5a3f0c11';
const backend = (o: { endpoint: string | null; forcePathStyle: boolean; region?: string; prefix?: string }) =>
  new S3Backend({
    kind: 's3',
    bucket: 'drover-files',
    prefix: o.prefix ?? '',
    endpoint: o.endpoint,
    region: o.region ?? 'eu-west-1',
    forcePathStyle: o.forcePathStyle,
    credentials: { accessKeyId: 'AKIA0', secretAccessKey: 'secret' },
  });

describe('the S3 backend', () => {
  it('presigns without a network call: an upload URL signing its content type, adding no checksum of its own', async () => {
    const b = backend({ endpoint: 'http://127.0.0.1:9', forcePathStyle: true, prefix: 'coord/' });
    const up = await b.presignUpload({ id: FILE, blobKey: b.blobKeyFor(FILE), contentType: 'text/csv' }, 900);
    const url = new URL(up.url);
    // A staging object of its own, never the file's object (`complete` promotes it).
    expect(`${url.origin}${url.pathname}`).toMatch(
      new RegExp(`^http://127\\.0\\.0\\.1:9/drover-files/coord/uploads/${FILE}/[0-9a-f]{24}$`),
    );
    expect(up.headers).toEqual({ 'content-type': 'text/csv' });
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('content-type;host');
    expect([...url.searchParams.keys()].filter((k) => /checksum/i.test(k))).toEqual([]);
  });

  it('presigns downloads that make the store name the file', async () => {
    const b = backend({ endpoint: 'http://127.0.0.1:9', forcePathStyle: true });
    const down = await b.presignDownload(
      { id: FILE, blobKey: b.blobKeyFor(FILE), filename: 'report 1.csv', contentType: 'text/csv', size: 3 },
      60,
    );
    const url = new URL(down.url);
    expect(url.searchParams.get('response-content-disposition')).toBe(
      `attachment; filename="report 1.csv"; filename*=UTF-8''report%201.csv`,
    );
    expect(url.searchParams.get('response-content-type')).toBe('text/csv');
  });

  it.each([
    { endpoint: 'http://127.0.0.1:9000', forcePathStyle: true },
    { endpoint: 'https://minio.example.test', forcePathStyle: false },
    { endpoint: null, forcePathStyle: false },
    { endpoint: null, forcePathStyle: true },
  ])('points its URLs at the origin the dashboard is allowed to reach (%o)', async (o) => {
    const b = backend(o);
    const { url } = await b.presignDownload(
      { id: FILE, blobKey: b.blobKeyFor(FILE), filename: 'f', contentType: 'x/y', size: 1 },
      60,
    );
    expect(new URL(url).origin).toBe(bucketOrigin({ bucket: 'drover-files', region: 'eu-west-1', ...o }));
  });
});
