import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import {
  blobKeyOf,
  fileIdOfBlobKey,
  StorageUnavailableError,
  UploadChangedError,
  UploadTooLargeError,
  type BlobFile,
  type StagedUpload,
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

/** Reading an upload back at `complete` may take this long, plus a second per MiB of it. */
const READ_BASE_MS = 60_000;
const READ_MS_PER_MIB = 1000;

/**
 * An S3-compatible bucket as a storage backend (docs/storage.md), through the AWS SDK v3 and its
 * presigner. Uploads and downloads go straight to the store with presigned URLs; the coordinator
 * only signs them (no network call), reads an upload back once at `complete` to record its size
 * and SHA-256, copies it to the file's object, and deletes objects. Object keys are the prefix and
 * the blob key (`<aa>/<file id>`, as on disk), so files move between disk and bucket without
 * renaming. An upload URL never names that object: it names a staging object of its own,
 * `<prefix>uploads/<file id>/<nonce>`, which `complete` checks (its size by HEAD, then its bytes,
 * read no further than that size and within a deadline), copies to the file's object and removes;
 * a PUT that lands after `complete` or a deletion writes only its staging object, removed by the
 * deletion and once more when the upload URL has expired (domain/files/file-service.ts).
 *
 * The client neither adds checksums to presigned uploads (which would bind an upload to the empty
 * body's checksum) nor retries more than once: the caller answers 503 and the file stays pending.
 */
export class S3Backend implements StorageBackend {
  readonly kind: 'local' | 's3';
  /** A presigned PUT goes straight to the store, whatever became of the file meanwhile. */
  readonly lateUploads = true;
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
      Key: `${this.uploadsPrefix(file.id)}${randomBytes(12).toString('hex')}`,
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

  /**
   * The newest staging object of the file (by the store's LastModified), or, with none, the
   * file's own object (an upload made before uploads were staged): its size by HEAD, checked
   * against `maxBytes` before any byte is read, then its bytes hashed, at most its size of them
   * (a store sending more is cut off) and within a deadline.
   */
  async findUpload(file: BlobFile, maxBytes: number): Promise<StagedUpload | null> {
    const staged = await this.listUploads(file.id);
    const newest = staged.sort((a, b) => a.modified - b.modified || a.key.localeCompare(b.key)).at(-1);
    if (newest) return this.measure(newest.key, newest.key, maxBytes);
    return this.measure(this.objectKey(file.blobKey), '', maxBytes);
  }

  /** Copies the staging object to the file's object (only the version that was hashed), then removes it. */
  async promote(file: BlobFile, upload: StagedUpload): Promise<void> {
    if (upload.ref === '') return;
    if (!upload.ref.startsWith(this.uploadsPrefix(file.id))) {
      throw new Error(`not a staged upload of file ${file.id}: ${JSON.stringify(upload.ref)}`);
    }
    const { s3, sdk } = await this.connect();
    try {
      await s3.send(
        new sdk.CopyObjectCommand({
          Bucket: this.o.bucket,
          Key: this.objectKey(file.blobKey),
          CopySource: `${this.o.bucket}/${upload.ref.split('/').map(encodeURIComponent).join('/')}`,
          ...(upload.version ? { CopySourceIfMatch: upload.version } : {}),
        }),
      );
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (isMissing(error) || status === 412) throw new UploadChangedError();
      throw this.unavailable('write', error);
    }
  }

  async discardUploads(file: BlobFile): Promise<void> {
    for (const { key } of await this.listUploads(file.id)) await this.deleteObject(key);
  }

  async delete(blobKey: string): Promise<void> {
    await this.deleteObject(this.objectKey(blobKey));
    await this.discardUploads({ id: fileIdOfBlobKey(blobKey), blobKey });
  }

  private async deleteObject(key: string): Promise<void> {
    const { s3, sdk } = await this.connect();
    try {
      await s3.send(new sdk.DeleteObjectCommand({ Bucket: this.o.bucket, Key: key }));
    } catch (error) {
      if (isMissing(error)) return;
      throw this.unavailable('delete', error);
    }
  }

  /** The staging objects of the file (its upload URLs' keys). */
  private async listUploads(fileId: string): Promise<{ key: string; modified: number }[]> {
    const { s3, sdk } = await this.connect();
    const out: { key: string; modified: number }[] = [];
    let token: string | undefined;
    try {
      do {
        const page = await s3.send(
          new sdk.ListObjectsV2Command({
            Bucket: this.o.bucket,
            Prefix: this.uploadsPrefix(fileId),
            ...(token ? { ContinuationToken: token } : {}),
          }),
        );
        for (const o of page.Contents ?? []) {
          if (o.Key) out.push({ key: o.Key, modified: o.LastModified?.getTime() ?? 0 });
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    } catch (error) {
      throw this.unavailable('list', error);
    }
    return out;
  }

  /**
   * HEAD, then a GET of that version only and of at most its size (a store that sends more is cut
   * off, and so is one too slow for the deadline); null when there is no such object.
   */
  private async measure(key: string, ref: string, maxBytes: number): Promise<StagedUpload | null> {
    const { s3, sdk } = await this.connect();
    let size: number;
    let etag: string | undefined;
    try {
      const head = await s3.send(new sdk.HeadObjectCommand({ Bucket: this.o.bucket, Key: key }));
      size = head.ContentLength ?? 0;
      etag = head.ETag;
    } catch (error) {
      if (isMissing(error)) return null;
      throw this.unavailable('read', error);
    }
    if (size > maxBytes) throw new UploadTooLargeError(size, maxBytes);
    const abort = new AbortController();
    const deadlineMs = READ_BASE_MS + Math.ceil(size / 1048576) * READ_MS_PER_MIB;
    const timer = setTimeout(() => abort.abort(new Error(`not read within ${deadlineMs} ms`)), deadlineMs);
    timer.unref();
    const hash = createHash('sha256');
    let read = 0;
    let body: Readable | undefined;
    try {
      const object = await s3.send(
        new sdk.GetObjectCommand({
          Bucket: this.o.bucket,
          Key: key,
          ...(etag ? { IfMatch: etag } : {}),
          ...(size > 0 ? { Range: `bytes=0-${size - 1}` } : {}),
        }),
        { abortSignal: abort.signal },
      );
      body = object.Body as Readable;
      for await (const chunk of body) {
        read += (chunk as Buffer).length;
        if (read > size) throw new Error(`the store sent more than the ${size} bytes of the object`);
        if (abort.signal.aborted) throw abort.signal.reason;
        hash.update(chunk as Buffer);
      }
      if (read !== size) throw new Error(`the store sent ${read} of the ${size} bytes of the object`);
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (isMissing(error) || status === 412) throw new UploadChangedError();
      throw this.unavailable('read', abort.signal.aborted ? abort.signal.reason : error);
    } finally {
      clearTimeout(timer);
      body?.destroy();
    }
    return { ref, size, sha256: hash.digest('hex'), ...(etag ? { version: etag } : {}) };
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

  /** `<prefix>uploads/<file id>/`: the staging objects of the file's uploads. */
  private uploadsPrefix(fileId: string): string {
    return `${this.o.prefix}uploads/${fileId.toLowerCase()}/`;
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

  private unavailable(
    what: 'read' | 'write' | 'delete' | 'list' | 'sign for',
    error: unknown,
  ): StorageUnavailableError {
    const e = error as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode;
    const reason = [e.name, status ? `HTTP ${status}` : null, e.message].filter(Boolean).join(', ');
    return new StorageUnavailableError(
      `The object store of bucket ${this.o.bucket} could not ${what === 'list' ? 'list the objects' : `${what} the object`} (${reason || String(error)})`,
      { cause: error },
    );
  }
}

function isMissing(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}
