import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import {
  blobKeyOf,
  StorageUnavailableError,
  type BlobStat,
  type DownloadTarget,
  type PresignedDownload,
  type PresignedUpload,
  type StorageBackend,
  type UploadTarget,
} from './backend.js';
import { attachmentDisposition } from './content-disposition.js';
import { EndpointGuard, type AllowedHosts } from './endpoint-guard.js';

/** Where an S3 backend keeps its objects, and the keys it signs with. */
export interface S3BackendOptions {
  /** `local` for the coordinator's own storage in a bucket (DROVER_STORAGE_URL), `s3` for a binding's. */
  kind: 'local' | 's3';
  bucket: string;
  /** Prepended to every blob key: `drover/`, or empty. */
  prefix: string;
  /** The store's address; null: AWS S3 of the region. */
  endpoint: string | null;
  region: string;
  forcePathStyle: boolean;
  /** null: the AWS SDK's usual sources (environment, profile, instance role). */
  credentials: { accessKeyId: string; secretAccessKey: string } | null;
  /**
   * An organization's binding: the hosts of the coordinator's own networks its endpoint may be
   * (endpoint-guard.ts); absent for the operator's own bucket (DROVER_STORAGE_URL).
   */
  allowedHosts?: AllowedHosts;
}

type Sdk = typeof import('@aws-sdk/client-s3') & typeof import('@aws-sdk/s3-request-presigner');

/** The SDK, loaded the first time a bucket is used: a coordinator on its data directory never pays for it. */
let sdk: Promise<Sdk> | null = null;
const loadSdk = (): Promise<Sdk> =>
  (sdk ??= Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/s3-request-presigner')]).then(
    ([client, presigner]) => ({ ...client, ...presigner }),
  ));

/**
 * An S3-compatible bucket as a storage backend (docs/storage.md), through the AWS SDK v3 and its
 * presigner. Uploads and downloads go straight to the store with presigned URLs; the coordinator
 * only signs them (no network call), reads an object back once at `complete` to record its size
 * and SHA-256, and deletes objects. Object keys are the prefix and the blob key (`<aa>/<file id>`,
 * as on disk), so files move between disk and bucket without renaming.
 *
 * The client neither adds checksums to presigned uploads (which would bind an upload to the empty
 * body's checksum) nor retries more than once: the caller answers 503 and the file stays pending.
 */
export class S3Backend implements StorageBackend {
  readonly kind: 'local' | 's3';
  private client: Promise<{ s3: S3Client; sdk: Sdk }> | null = null;

  constructor(private readonly o: S3BackendOptions) {
    this.kind = o.kind;
  }

  blobKeyFor(fileId: string): string {
    return blobKeyOf(fileId);
  }

  async presignUpload(file: UploadTarget, expiresInSeconds: number): Promise<PresignedUpload> {
    const { s3, sdk } = await this.connect();
    const command = new sdk.PutObjectCommand({
      Bucket: this.o.bucket,
      Key: this.objectKey(file.blobKey),
      ContentType: file.contentType,
    });
    // content-type is signed: the store refuses an upload that sends another.
    const url = await this.sign(() =>
      sdk.getSignedUrl(s3, command, { expiresIn: expiresInSeconds, signableHeaders: new Set(['content-type']) }),
    );
    return { url, method: 'PUT', headers: { 'content-type': file.contentType } };
  }

  async presignDownload(file: DownloadTarget, expiresInSeconds: number): Promise<PresignedDownload> {
    const { s3, sdk } = await this.connect();
    const command = new sdk.GetObjectCommand({
      Bucket: this.o.bucket,
      Key: this.objectKey(file.blobKey),
      ResponseContentDisposition: attachmentDisposition(file.filename),
      ResponseContentType: file.contentType,
    });
    return { url: await this.sign(() => sdk.getSignedUrl(s3, command, { expiresIn: expiresInSeconds })) };
  }

  /** Signing needs keys only, but finding them may fail (none set, an unreachable instance role). */
  private async sign(presign: () => Promise<string>): Promise<string> {
    try {
      return await presign();
    } catch (error) {
      throw this.unavailable('sign for', error);
    }
  }

  /** Reads the object once, hashing it as it streams by (memory stays flat whatever its size). */
  async stat(blobKey: string): Promise<BlobStat | null> {
    const { s3, sdk } = await this.connect();
    try {
      const object = await s3.send(new sdk.GetObjectCommand({ Bucket: this.o.bucket, Key: this.objectKey(blobKey) }));
      const hash = createHash('sha256');
      let size = 0;
      for await (const chunk of object.Body as Readable) {
        hash.update(chunk as Buffer);
        size += (chunk as Buffer).length;
      }
      return { size, sha256: hash.digest('hex') };
    } catch (error) {
      if (isMissing(error)) return null;
      throw this.unavailable('read', error);
    }
  }

  async delete(blobKey: string): Promise<void> {
    const { s3, sdk } = await this.connect();
    try {
      await s3.send(new sdk.DeleteObjectCommand({ Bucket: this.o.bucket, Key: this.objectKey(blobKey) }));
    } catch (error) {
      if (isMissing(error)) return;
      throw this.unavailable('delete', error);
    }
  }

  /** Puts an object (copy-data moves the data directory's blobs with it). */
  async put(blobKey: string, body: Readable, size: number): Promise<void> {
    const { s3, sdk } = await this.connect();
    try {
      await s3.send(
        new sdk.PutObjectCommand({
          Bucket: this.o.bucket,
          Key: this.objectKey(blobKey),
          Body: body,
          ContentLength: size,
        }),
      );
    } catch (error) {
      throw this.unavailable('write', error);
    }
  }

  /** The object's size as the store reports it (HEAD, nothing read), or null when there is none. */
  async size(blobKey: string): Promise<number | null> {
    const { s3, sdk } = await this.connect();
    try {
      const head = await s3.send(new sdk.HeadObjectCommand({ Bucket: this.o.bucket, Key: this.objectKey(blobKey) }));
      return head.ContentLength ?? null;
    } catch (error) {
      if (isMissing(error)) return null;
      throw this.unavailable('read', error);
    }
  }

  /** Where the objects go, as `s3://<bucket>/<prefix>`, for messages. */
  get location(): string {
    return `s3://${this.o.bucket}/${this.o.prefix}`;
  }

  private objectKey(blobKey: string): string {
    return `${this.o.prefix}${blobKey}`;
  }

  private connect(): Promise<{ s3: S3Client; sdk: Sdk }> {
    return (this.client ??= loadSdk().then((sdk) => {
      const { endpoint, region, forcePathStyle, credentials } = this.o;
      const s3 = new sdk.S3Client({
        region,
        forcePathStyle,
        ...(endpoint ? { endpoint } : {}),
        // A copy: the SDK marks the object it is given (the configuration's is frozen).
        ...(credentials ? { credentials: { ...credentials } } : {}),
        maxAttempts: 2,
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        requestHandler: {
          connectionTimeout: 5000,
          requestTimeout: 30_000,
          ...(this.o.allowedHosts !== undefined && endpoint
            ? new EndpointGuard(this.o.allowedHosts).agentsFor(endpoint)
            : {}),
        },
      });
      return { s3, sdk };
    }));
  }

  private unavailable(what: 'read' | 'write' | 'delete' | 'sign for', error: unknown): StorageUnavailableError {
    const e = error as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode;
    const reason = [e.name, status ? `HTTP ${status}` : null, e.message].filter(Boolean).join(', ');
    return new StorageUnavailableError(
      `The object store of bucket ${this.o.bucket} could not ${what} the object (${reason || String(error)})`,
      { cause: error },
    );
  }
}

function isMissing(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}
