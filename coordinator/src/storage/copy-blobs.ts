import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { S3Backend } from './s3-backend.js';

/** A file of the data directory whose blob `copy-data` puts into the bucket. */
export interface BlobToCopy {
  id: string;
  blobKey: string;
  /** `pending` (maybe not uploaded yet), `active`, `deleting`, `delete_failed`; `deleted` files are not listed. */
  status: string;
  /** The size its row records; null until `complete`. */
  size: number | null;
}

/** What was found wrong in the data directory itself (copied as it is; the old coordinator had the same). */
export interface BlobAnomaly {
  fileId: string;
  problem: string;
}

export interface BlobCopyResult {
  /** Objects put and checked. */
  copied: number;
  bytes: number;
  /** Files with no blob on disk that need none (an upload not made, a deletion under way). */
  absent: number;
  anomalies: BlobAnomaly[];
}

/** The largest object one PUT can create on AWS S3. */
export const MAX_SINGLE_PUT_BYTES = 5 * 1024 ** 3;

const BLOB_KEY = /^[0-9a-f]{2}\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface CopyBlobsOptions {
  /** `<data dir>/blobs` */
  root: string;
  target: S3Backend;
  /** The files, page by page. */
  pages: Iterable<BlobToCopy[]>;
  /** Uploads at once (default 4); memory holds a stream buffer for each. */
  concurrency?: number;
  onProgress?: (copied: number, bytes: number) => void;
}

/**
 * Puts the blobs of the data directory into the bucket under the same keys (`<aa>/<file id>` after
 * the bucket's prefix, as a coordinator on that bucket names them; a pending file's newest staged
 * upload, where it has no blob yet), each streamed from disk
 * (memory does not grow with a file's size) and checked after the upload: the store must report
 * the size that was read from disk. A file without a blob is fine while it is `pending` or being
 * deleted; an `active` one without its blob, or whose blob's size differs from its row, is
 * reported as an anomaly. An upload that fails or comes out with another size throws.
 */
export async function copyBlobs(o: CopyBlobsOptions): Promise<BlobCopyResult> {
  const result: BlobCopyResult = { copied: 0, bytes: 0, absent: 0, anomalies: [] };
  const concurrency = o.concurrency ?? 4;
  for (const page of o.pages) {
    let next = 0;
    const worker = async () => {
      while (next < page.length) {
        const file = page[next++]!;
        await copyOne(o, file, result);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, page.length) }, worker));
  }
  return result;
}

async function copyOne(o: CopyBlobsOptions, file: BlobToCopy, result: BlobCopyResult): Promise<void> {
  if (!BLOB_KEY.test(file.blobKey))
    throw new Error(`file ${file.id} has a blob key that is not a local one: ${file.blobKey}`);
  let source = path.join(o.root, file.blobKey);
  let size: number;
  try {
    size = (await fsp.stat(source)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    // A pending file's upload is staged (local-backend.ts): its newest one goes to the file's
    // object, where `complete` on the bucket finds an upload made before the move.
    const staged = file.status === 'pending' ? await newestStaged(o.root, file.blobKey) : null;
    if (staged) {
      source = staged.path;
      size = staged.size;
    } else {
      if (file.status === 'active')
        result.anomalies.push({ fileId: file.id, problem: `its blob ${source} is missing` });
      else result.absent++;
      return;
    }
  }
  if (file.status === 'active' && file.size !== null && file.size !== size) {
    result.anomalies.push({ fileId: file.id, problem: `its blob is ${size} bytes on disk, its row says ${file.size}` });
  }
  if (size > MAX_SINGLE_PUT_BYTES) {
    throw new Error(
      `file ${file.id} is ${size} bytes, more than one upload can put (5 GiB); copy it with the store's own tools (aws s3 cp ${source} ${o.target.location}${file.blobKey})`,
    );
  }
  const stream = fs.createReadStream(source, { highWaterMark: 1024 * 1024 });
  try {
    await o.target.put(file.blobKey, stream, size);
  } finally {
    stream.destroy();
  }
  const stored = await o.target.size(file.blobKey);
  if (stored !== size) {
    throw new Error(
      `file ${file.id}: the store holds ${stored === null ? 'no object' : `${stored} bytes`} at ${o.target.location}${file.blobKey} after the upload of ${size} bytes`,
    );
  }
  result.copied++;
  result.bytes += size;
  o.onProgress?.(result.copied, result.bytes);
}

/** The newest staged upload of a file (`uploads/<aa>/<file id>.<sequence>.<sha256>`), or null. */
async function newestStaged(root: string, blobKey: string): Promise<{ path: string; size: number } | null> {
  const [shard, id] = blobKey.split('/') as [string, string];
  const dir = path.join(root, 'uploads', shard);
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const staged = names.filter((n) => n.startsWith(`${id}.`) && /\.\d{20}\.[0-9a-f]{64}$/.test(n)).sort();
  for (const name of staged.reverse()) {
    try {
      return { path: path.join(dir, name), size: (await fsp.stat(path.join(dir, name))).size };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return null;
}
