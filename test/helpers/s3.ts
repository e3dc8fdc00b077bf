import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { makeTempDir } from './coordinator.js';

/** s3rver's keys (it accepts only these). */
export const S3_KEYS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (options: {
  port: number;
  address: string;
  silent: boolean;
  directory: string;
  configureBuckets: { name: string; configs?: string[] }[];
}) => S3rverInstance;

/** A bucket's CORS rules as S3 takes them: any origin may PUT, GET and HEAD, with any header. */
const OPEN_CORS = `<CORSConfiguration>
  <CORSRule>
    <AllowedOrigin>*</AllowedOrigin>
    <AllowedMethod>PUT</AllowedMethod>
    <AllowedMethod>GET</AllowedMethod>
    <AllowedMethod>HEAD</AllowedMethod>
    <AllowedHeader>*</AllowedHeader>
    <MaxAgeSeconds>600</MaxAgeSeconds>
  </CORSRule>
</CORSConfiguration>`;

// s3rver is CommonJS without types.
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;

/**
 * An S3-compatible server on loopback for the storage tests: s3rver (from npm), its objects as
 * files under a temporary directory, the buckets made up front. Presigned URLs work against it as
 * against S3 (it checks their expiry, though not their signature). `stop` and `start` again on the
 * same port stand for an outage.
 */
export class TestS3 {
  readonly dir = makeTempDir('drover-s3-');
  private server: S3rverInstance | null = null;
  port = 0;

  /** `corsBuckets`: the buckets whose CORS rules let any page PUT and GET (as a dashboard needs). */
  constructor(
    readonly buckets: string[],
    private readonly corsBuckets: string[] = [],
  ) {}

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = new S3rver({
      port: this.port,
      address: '127.0.0.1',
      silent: true,
      directory: this.dir,
      configureBuckets: this.buckets.map((name) => ({
        name,
        ...(this.corsBuckets.includes(name) ? { configs: [OPEN_CORS] } : {}),
      })),
    });
    this.port = (await server.run()).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    await this.server?.close();
    this.server = null;
  }

  async close(): Promise<void> {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** `DROVER_STORAGE_URL` for a bucket of this server, and the keys the coordinator signs with. */
  storageEnv(bucket: string, prefix = ''): Record<string, string> {
    const url = `s3://${bucket}${prefix ? `/${prefix}` : ''}?endpoint=${encodeURIComponent(this.endpoint)}&region=us-east-1&forcePathStyle=true`;
    return {
      DROVER_STORAGE_URL: url,
      AWS_ACCESS_KEY_ID: S3_KEYS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_KEYS.secretAccessKey,
    };
  }

  /**
   * Lets organizations' storage bindings use this server: it listens on the loopback, which the
   * coordinator refuses to bindings unless the operator allows the host (docs/storage.md).
   */
  bindingEnv(): Record<string, string> {
    return { DROVER_STORAGE_ALLOWED_HOSTS: new URL(this.endpoint).host };
  }

  /** The object keys of a bucket (s3rver keeps each object as `<key>._S3rver_object`). */
  objectKeys(bucket: string): string[] {
    const root = path.join(this.dir, bucket);
    const keys: string[] = [];
    const walk = (dir: string) => {
      if (!fs.existsSync(dir)) return;
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (entry.name.endsWith('._S3rver_object')) {
          keys.push(path.relative(root, full).replace(/\._S3rver_object$/, ''));
        }
      }
    };
    walk(root);
    return keys.sort();
  }
}
