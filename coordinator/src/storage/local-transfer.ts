import type { Readable } from 'node:stream';
import type { BlobReader, BlobSink } from './blob-reader.js';
import type { FileForTransfer, FileRepository } from '../domain/model/files.js';
import type { Metrics } from '../domain/metrics.js';
import { AppError, conflict, forbidden, notFound } from '../errors.js';
import type { Clock } from '../util/clock.js';
import type { BlobStat } from './backend.js';
import type { BlobUrlQuery, BlobUrlSigner } from './blob-url.js';
import { attachmentDisposition } from './content-disposition.js';
import { parseRange } from './http-range.js';
import { BlobTooLargeError, type LocalBackend } from './local-backend.js';

export interface LocalTransferDeps {
  files: FileRepository;
  local: LocalBackend;
  signer: BlobUrlSigner;
  clock: Clock;
  maxFileBytes: () => number;
  /** Counts the bytes received and sent (docs/metrics.md). */
  metrics: Pick<Metrics, 'storageBytes'>;
}

/** A download ready to send: status, headers and the bytes. */
export interface BlobDownload {
  status: 200 | 206;
  headers: Record<string, string>;
  body: Pick<BlobReader, 'writeTo'>;
}

const REFUSALS = {
  malformed: 'The URL is not a valid presigned URL (its m, exp or sig parameter is missing or malformed)',
  bad_signature: 'The URL signature is not valid: the URL was altered or was not issued by this server',
  expired: 'The URL has expired; ask for a new one',
} as const;

/**
 * The coordinator's side of the local backend's presigned URLs (`/v1/storage/blobs/:fileId`):
 * checks the URL, then receives (PUT) or serves (GET) the blob. Order of refusals: a bad URL is
 * 403 (whether or not the file exists), an unknown file 404, a file in the wrong state 409, a
 * body over the limit 413.
 */
export class LocalTransfers {
  constructor(private readonly d: LocalTransferDeps) {}

  /**
   * Receives an upload of a pending file (staged: `complete` makes the newest one the file's blob).
   * `accepted` is called once every refusal that needs no byte of the body was ruled out, before
   * the body is read (the route answers a client's `Expect: 100-continue` then).
   */
  async receive(
    fileId: string,
    query: BlobUrlQuery,
    body: Readable,
    contentLength: string | undefined,
    accepted: () => void = () => {},
  ): Promise<BlobStat & { fileId: string }> {
    const file = await this.authorize('PUT', fileId, query);
    if (file.status !== 'pending') {
      throw conflict(
        file.status === 'active'
          ? 'The file is already complete; upload a new file instead'
          : `The file is ${file.status}; it no longer accepts an upload`,
      );
    }
    const declared = file.declaredSize !== null && file.declaredSize < this.d.maxFileBytes();
    const limit = declared ? file.declaredSize! : this.d.maxFileBytes();
    const tooLarge = () => (declared ? largerThanAnnounced(limit) : overLimit(limit));
    if (contentLength !== undefined && Number(contentLength) > limit) throw tooLarge();
    accepted();
    let stat: BlobStat & { upload: string };
    try {
      stat = await this.d.local.receive(file.blobKey, body, limit);
    } catch (error) {
      if (error instanceof BlobTooLargeError) throw tooLarge();
      throw error;
    }
    // Completed or deleted while it was being received: the upload is a staged one of its own,
    // never the file's blob, and only it is removed.
    const after = await this.d.files.findForTransfer(fileId);
    if (after?.status !== 'pending') {
      await this.d.local.discardUpload(file, stat.upload);
      throw conflict(`The file is ${after?.status ?? 'gone'}; the upload was discarded`);
    }
    this.d.metrics.storageBytes('upload', stat.size);
    return { fileId, size: stat.size, sha256: stat.sha256 };
  }

  /** Serves an active file, whole or one byte range. */
  async download(
    fileId: string,
    query: BlobUrlQuery,
    headers: { range?: string | undefined; ifRange?: string | undefined },
  ): Promise<BlobDownload> {
    const file = await this.authorize('GET', fileId, query);
    if (file.status !== 'active' || file.size === null || file.sha256 === null) {
      throw new AppError('not_found', `The file is ${file.status}: there is nothing to download`);
    }
    const size = file.size;
    const etag = `"${file.sha256}"`;
    // If-Range with another validator: the representation changed, send it whole.
    const range = headers.ifRange !== undefined && headers.ifRange !== etag ? undefined : headers.range;
    const wanted = parseRange(range, size);
    const common: Record<string, string> = {
      'content-type': servedContentType(file.contentType),
      'content-disposition': attachmentDisposition(file.filename),
      'accept-ranges': 'bytes',
      etag,
      'cache-control': 'private, no-store',
      'x-content-type-options': 'nosniff',
      // Never a document of this origin, whatever opens it.
      'content-security-policy': "default-src 'none'; sandbox",
    };
    if (wanted.kind === 'unsatisfiable') throw new RangeNotSatisfiable(size);
    const partial = wanted.kind === 'partial' ? { start: wanted.start, end: wanted.end } : undefined;
    const reader = await this.d.local.openRead(file.blobKey, partial);
    if (!reader) throw new AppError('not_found', 'The file is missing from storage');
    const body = {
      writeTo: async (sink: BlobSink, stallMs?: number) => {
        try {
          await reader.writeTo(sink, stallMs);
        } finally {
          this.d.metrics.storageBytes('download', reader.sent);
        }
      },
    };
    if (!partial) return { status: 200, headers: { ...common, 'content-length': String(size) }, body };
    return {
      status: 206,
      headers: {
        ...common,
        'content-length': String(partial.end - partial.start + 1),
        'content-range': `bytes ${partial.start}-${partial.end}/${size}`,
      },
      body,
    };
  }

  private async authorize(method: 'PUT' | 'GET', fileId: string, query: BlobUrlQuery): Promise<FileForTransfer> {
    const check = this.d.signer.check(method, fileId, query, Math.floor(this.d.clock.now() / 1000));
    if (!check.ok) {
      throw forbidden(
        check.reason === 'wrong_method'
          ? `This URL is signed for ${method === 'PUT' ? 'GET' : 'PUT'}, not ${method}`
          : REFUSALS[check.reason],
      );
    }
    const file = await this.d.files.findForTransfer(fileId);
    if (!file || file.bindingDeleted) throw notFound('File');
    return file;
  }
}

/** 416, with the blob's size for the `Content-Range: bytes *\/<size>` header. */
export class RangeNotSatisfiable extends AppError {
  constructor(readonly size: number) {
    super('range_not_satisfiable', `The requested range is outside the file (${size} bytes)`);
  }
}

function overLimit(limit: number): AppError {
  return new AppError('payload_too_large', `The file is larger than the limit of ${limit} bytes`);
}

/** More bytes than the upload announced (its `size`) when it was presigned. */
function largerThanAnnounced(size: number): AppError {
  return new AppError('payload_too_large', `The file is larger than the ${size} bytes its upload announced`);
}

/** JavaScript's MIME types (WHATWG's list) and CSS's: what a page runs or applies from a URL. */
const ACTIVE_TYPE =
  /^\s*(?:(?:application|text)\/(?:x-)?(?:java|ecma)script|text\/javascript1\.[0-5]|text\/(?:jscript|livescript)|text\/css)\s*(?:;|$)/i;

/**
 * The Content-Type a blob is served with from the coordinator's own origin: the uploader's, but
 * for a script's or a style sheet's, served as `application/octet-stream` (with `nosniff`, never
 * run nor applied): the dashboard's pages load scripts and styles from this origin
 * (`script-src 'self'`), and a stored file must not be one of them. The file's `contentType` in
 * the API is unchanged.
 */
export function servedContentType(contentType: string): string {
  return ACTIVE_TYPE.test(contentType) ? 'application/octet-stream' : contentType;
}
