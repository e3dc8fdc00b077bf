import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCopyDataConfig, type CopyDataFlags } from '../../src/config/copy-data-config.js';
import { problemsOf } from './problems.js';

const problems = (env: Record<string, string>, flags: CopyDataFlags): string[] =>
  problemsOf(() => loadCopyDataConfig(env, flags, '/srv'));

describe('the settings of copy-data', () => {
  it('read the data directory, the database and the bucket from the flags, the keys from the environment', () => {
    const config = loadCopyDataConfig(
      { AWS_ACCESS_KEY_ID: 'AKIA0', AWS_SECRET_ACCESS_KEY: 'secret' },
      {
        dataDir: 'data',
        to: 'postgres://drover:hunter2@db.internal/drover',
        filesTo: 's3://drover-files/prod?endpoint=http://minio:9000&region=eu-west-1&forcePathStyle=true',
      },
      '/srv',
    );
    expect(config).toEqual({
      dataDir: path.resolve('/srv/data'),
      to: {
        url: 'postgres://drover:hunter2@db.internal/drover',
        redactedUrl: 'postgres://drover:****@db.internal/drover',
      },
      filesTo: {
        bucket: 'drover-files',
        prefix: 'prod/',
        endpoint: 'http://minio:9000',
        region: 'eu-west-1',
        forcePathStyle: true,
        credentials: { accessKeyId: 'AKIA0', secretAccessKey: 'secret' },
      },
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('take the data directory from DROVER_DATA_DIR, never the database from DROVER_DATABASE_URL', () => {
    const env = { DROVER_DATA_DIR: '/var/lib/drover', DROVER_DATABASE_URL: 'postgres://u:p@h/d' };
    expect(loadCopyDataConfig(env, { to: 'postgres://u:p@other/d' }).dataDir).toBe('/var/lib/drover');
    expect(problems(env, {})).toEqual([
      '--to: expected the PostgreSQL database to copy into, postgres://<user>:<password>@<host>/<database>',
    ]);
  });

  it('name the flag of each value that is wrong, never the password', () => {
    const found = problems(
      { AWS_ACCESS_KEY_ID: 'AKIA0' },
      { dataDir: ' ', to: 'mysql://root:hunter2@db/drover', filesTo: 'gs://bucket' },
    );
    expect(found).toEqual([
      '--data-dir: expected a directory path, got an empty string',
      expect.stringMatching(/^--to: expected postgres:\/\/.*, got the scheme `mysql:`$/),
      expect.stringMatching(/^--files-to: expected s3:\/\/.*, got the scheme `gs:`$/),
    ]);
    expect(found.join('\n')).not.toContain('hunter2');
  });
});
