import { describe, expect, it } from 'vitest';
import { parseStorageBindingInput, type StorageBindingInput } from '../../../src/domain/files/storage-bindings.js';
import type { AppError, ValidationDetail } from '../../../src/errors.js';

const s3: StorageBindingInput = {
  name: 'backups',
  backend: 's3',
  endpoint: 'http://minio.local:9000/',
  bucket: 'my.bucket-1',
  region: 'us-east-1',
  accessKeyId: 'minioadmin',
  secretAccessKey: 'super/secret+key=',
};

function problems(input: StorageBindingInput): ValidationDetail[] {
  try {
    parseStorageBindingInput(input);
  } catch (error) {
    return (error as AppError).details as ValidationDetail[];
  }
  throw new Error('expected a validation error');
}

describe('parseStorageBindingInput', () => {
  it('keeps a local binding without settings', () => {
    expect(parseStorageBindingInput({ name: ' disk ', backend: 'local' })).toEqual({
      name: 'disk',
      backend: 'local',
      config: {},
    });
  });

  it('normalises s3 settings, defaulting forcePathStyle to false and dropping trailing slashes', () => {
    expect(parseStorageBindingInput(s3)).toEqual({
      name: 'backups',
      backend: 's3',
      config: {
        endpoint: 'http://minio.local:9000',
        bucket: 'my.bucket-1',
        region: 'us-east-1',
        accessKeyId: 'minioadmin',
        secretAccessKey: 'super/secret+key=',
        forcePathStyle: false,
      },
    });
    expect(parseStorageBindingInput({ ...s3, forcePathStyle: true }).config.forcePathStyle).toBe(true);
  });

  it('needs every s3 setting but forcePathStyle', () => {
    expect(problems({ name: 'x', backend: 's3' }).map((d) => d.path)).toEqual([
      'body.endpoint',
      'body.bucket',
      'body.region',
      'body.accessKeyId',
      'body.secretAccessKey',
    ]);
  });

  it('refuses s3 settings on a local binding', () => {
    expect(problems({ name: 'x', backend: 'local', region: 'eu', forcePathStyle: true })).toEqual([
      { path: 'body.region', message: 'is not a setting of the local backend' },
      { path: 'body.forcePathStyle', message: 'is not a setting of the local backend' },
    ]);
  });

  it('accepts only plain http(s) endpoints', () => {
    for (const endpoint of [
      'ftp://x.test',
      'https://u:p@x.test',
      'https://x.test/?a=1',
      'https://x.test/#f',
      'x.test',
      'file:///etc',
    ]) {
      expect(
        problems({ ...s3, endpoint }).map((d) => d.path),
        endpoint,
      ).toEqual(['body.endpoint']);
    }
    expect(parseStorageBindingInput({ ...s3, endpoint: 'https://s3.example.test/prefix' }).config.endpoint).toBe(
      'https://s3.example.test/prefix',
    );
  });

  it('checks bucket names the way S3 does', () => {
    for (const bucket of ['ab', 'Upper', 'under_score', '-start', 'end-', 'b'.repeat(64)]) {
      expect(
        problems({ ...s3, bucket }).map((d) => d.path),
        bucket,
      ).toEqual(['body.bucket']);
    }
  });

  it('never puts the secret key in a message', () => {
    const secretAccessKey = 'top secret value';
    const details = problems({ ...s3, secretAccessKey });
    expect(details.map((d) => d.path)).toEqual(['body.secretAccessKey']);
    expect(JSON.stringify(details)).not.toContain('top secret');
    expect(JSON.stringify(problems({ ...s3, secretAccessKey: 7 }))).toContain('must be a string');
  });

  it('never repeats the password of an endpoint given with credentials', () => {
    expect(problems({ ...s3, endpoint: 'https://u:hunter2-s3@s3.example' })).toEqual([
      {
        path: 'body.endpoint',
        message: 'must be an http or https URL without credentials, got `https://u:****@s3.example/` (string)',
      },
    ]);
  });
});
