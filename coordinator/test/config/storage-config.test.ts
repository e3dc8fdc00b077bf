import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { configProblems } from './problems.js';

const problems = configProblems;

describe('DROVER_STORAGE_URL', () => {
  it('keeps files in the data directory when unset', () => {
    expect(loadConfig({}).storage).toEqual({ kind: 'disk' });
  });

  it('reads a bucket with its prefix, endpoint, region, path style and the keys of the environment', () => {
    const { storage } = loadConfig({
      DROVER_STORAGE_URL:
        's3://drover-files/prod/eu?endpoint=http://127.0.0.1:9000/&region=eu-west-1&forcePathStyle=true',
      AWS_ACCESS_KEY_ID: 'AKIA0',
      AWS_SECRET_ACCESS_KEY: 'secret',
    });
    expect(storage).toEqual({
      kind: 's3',
      bucket: 'drover-files',
      prefix: 'prod/eu/',
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu-west-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'AKIA0', secretAccessKey: 'secret' },
    });
  });

  it('defaults to AWS S3 in us-east-1 with virtual-host addressing and the SDK finding the keys', () => {
    expect(loadConfig({}, { storageUrl: 's3://my-bucket' }).storage).toEqual({
      kind: 's3',
      bucket: 'my-bucket',
      prefix: '',
      endpoint: null,
      region: 'us-east-1',
      forcePathStyle: false,
      credentials: null,
    });
  });

  it('names each mistake, and never echoes keys put in the URL', () => {
    expect(problems({ DROVER_STORAGE_URL: 'https://bucket' })[0]).toMatch(
      /^DROVER_STORAGE_URL: expected s3:\/\/<bucket>.*, got the scheme `https:`$/,
    );
    expect(problems({}, { storageUrl: 'not a url' })[0]).toMatch(/^--storage-url: expected s3:\/\//);
    expect(problems({ DROVER_STORAGE_URL: 's3://B_ad' })).toEqual([
      'DROVER_STORAGE_URL: expected a bucket name (3 to 63 of a-z 0-9 . -), got `B_ad`',
    ]);
    const keys = problems({ DROVER_STORAGE_URL: 's3://AKIA:hunter2@bucket' });
    expect(keys).toEqual([
      'DROVER_STORAGE_URL: keys do not belong in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead',
    ]);
    expect(keys.join()).not.toContain('hunter2');
    // Nor is an endpoint's password repeated.
    expect(problems({ DROVER_STORAGE_URL: 's3://bucket?endpoint=https://minio:Sup3rSecret@minio.lan' })).toEqual([
      'DROVER_STORAGE_URL: expected endpoint to be an http(s) URL without credentials, got `https://minio:****@minio.lan/`',
    ]);
    expect(
      problems({ DROVER_STORAGE_URL: 's3://bucket?endpoint=ftp://x&region=eu west&forcePathStyle=yes&acl=public' }),
    ).toEqual([
      'DROVER_STORAGE_URL: unknown parameter `acl` (known: endpoint, region, forcePathStyle)',
      'DROVER_STORAGE_URL: expected endpoint to be an http(s) URL without credentials, got `ftp://x`',
      'DROVER_STORAGE_URL: expected a region such as us-east-1, got `eu west`',
      'DROVER_STORAGE_URL: expected forcePathStyle to be true or false, got `yes`',
    ]);
    expect(problems({ DROVER_STORAGE_URL: 's3://bucket', AWS_ACCESS_KEY_ID: 'AKIA0' })).toEqual([
      'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together (for DROVER_STORAGE_URL); only the first is set',
    ]);
  });
});
