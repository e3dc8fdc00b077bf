import { infiniteQueryOptions, queryOptions } from '@tanstack/react-query';
import type { RequestBody, Schema } from '@drover/shared/api';
import { api, ApiError, apiPage, apiPath, UNREACHABLE, type ApiPath } from './client';
import { FILES_REFRESH_MS } from './refresh';

/**
 * Stored files of an organization, with the member's session (docs/storage.md, "Files in the
 * dashboard"), and the upload through a presigned URL with its progress.
 */

/** A file's metadata, as the API answers it. */
export type StoredFile = Schema<'StoredFile'>;
export type FileStatus = StoredFile['status'];
export type CleanupRule = StoredFile['cleanupRule'];

export const FILE_STATUSES: readonly FileStatus[] = ['pending', 'active', 'deleting', 'deleted', 'delete_failed'];

type PresignedUpload = Schema<'PresignedUpload'>;

export { FILES_REFRESH_MS } from './refresh';

/** The organization's files list, with its filters and a page's cursor (none: the first page). */
function filesPath(orgId: string, filters: { bindingId?: string; status?: string }, cursor = ''): ApiPath {
  const query = new URLSearchParams();
  if (filters.bindingId) query.set('bindingId', filters.bindingId);
  if (filters.status) query.set('status', filters.status);
  if (cursor) query.set('cursor', cursor);
  return query.toString() ? apiPath`/orgs/${orgId}/files?${query}` : apiPath`/orgs/${orgId}/files`;
}

export const filesQuery = (orgId: string, filters: { bindingId?: string; status?: string }) =>
  queryOptions({
    queryKey: ['orgs', orgId, 'files', filters],
    queryFn: () => api<StoredFile[]>('GET', filesPath(orgId, filters)),
    refetchInterval: FILES_REFRESH_MS,
  });

/**
 * The files of a filter page by page, newest first, 200 a page, each after the previous page's
 * last (`x-next-cursor`): "Show older files" reads the next. A refresh reads every page shown
 * again, one after the other, so it comes every 5 s per page shown (a minute for 12 pages):
 * what was looked up long ago refreshes less often, never a burst of calls every 5 s.
 */
export const filePagesQuery = (orgId: string, filters: { bindingId?: string; status?: string }) =>
  infiniteQueryOptions({
    queryKey: ['orgs', orgId, 'files', 'pages', filters],
    queryFn: ({ pageParam }) => apiPage<StoredFile>(filesPath(orgId, filters, pageParam)),
    initialPageParam: '',
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: (query) => FILES_REFRESH_MS * Math.max(1, query.state.data?.pages.length ?? 1),
  });

/** The key every files list of the organization starts with (to refresh them all). */
export const filesKey = (orgId: string) => ['orgs', orgId, 'files'];

/** A fresh presigned download URL: one per click, since each expires. */
export const downloadUrl = (orgId: string, fileId: string) =>
  api<Schema<'DownloadUrl'>>('GET', apiPath`/orgs/${orgId}/files/${fileId}/download-url`);

export const deleteFile = (orgId: string, fileId: string) =>
  api<StoredFile>('DELETE', apiPath`/orgs/${orgId}/files/${fileId}`);

/** What an upload asks of the coordinator (the presign-upload body). */
export type UploadRequest = RequestBody<'presignOrgUpload'>;

/** The three calls of an upload: a failure says which one failed. */
export type UploadStage = 'presign' | 'upload' | 'complete';

export class UploadFailure extends Error {
  constructor(
    readonly stage: UploadStage,
    readonly error: ApiError,
  ) {
    super(error.message);
    this.name = 'UploadFailure';
  }
}

/** Thrown when the upload was cancelled (the signal aborted). */
export class UploadCancelled extends Error {
  constructor() {
    super('The upload was cancelled');
    this.name = 'UploadCancelled';
  }
}

export interface UploadProgress {
  loaded: number;
  total: number;
}

/**
 * Uploads `blob`: presign-upload, a PUT of the bytes to the presigned URL with its headers
 * (progress reported as it goes), then complete. A pending file left by a cancel or a failure
 * after the presign is deleted. Rejects with UploadFailure (which call failed and why) or
 * UploadCancelled.
 */
export async function uploadFile(
  orgId: string,
  blob: Blob,
  request: UploadRequest,
  onProgress: (progress: UploadProgress) => void,
  signal: AbortSignal,
): Promise<StoredFile> {
  let presigned: PresignedUpload;
  try {
    presigned = await api<PresignedUpload>('POST', apiPath`/orgs/${orgId}/files/presign-upload`, { body: request });
  } catch (error) {
    throw new UploadFailure('presign', asApiError(error));
  }
  const abandon = () => deleteFile(orgId, presigned.fileId).catch(() => undefined);
  if (signal.aborted) {
    await abandon();
    throw new UploadCancelled();
  }
  try {
    await putBytes(presigned, blob, onProgress, signal);
  } catch (error) {
    await abandon();
    if (error instanceof UploadCancelled) throw error;
    throw new UploadFailure('upload', asApiError(error));
  }
  try {
    return await api<StoredFile>('POST', apiPath`/orgs/${orgId}/files/${presigned.fileId}/complete`);
  } catch (error) {
    await abandon();
    throw new UploadFailure('complete', asApiError(error));
  }
}

const asApiError = (error: unknown): ApiError =>
  error instanceof ApiError ? error : new ApiError(0, 'error', error instanceof Error ? error.message : String(error));

/**
 * The PUT, with XMLHttpRequest for its upload progress (fetch has none). The dashboard's
 * Content-Security-Policy lets the page connect to its own origin and to the coordinator's
 * storage bucket (DROVER_STORAGE_URL) only. An upload address of the coordinator itself on
 * another origin (DROVER_PUBLIC_URL differs from the address the browser opened) is refused here
 * with words that say what to change, rather than by the browser with none.
 */
function putBytes(
  presigned: PresignedUpload,
  blob: Blob,
  onProgress: (progress: UploadProgress) => void,
  signal: AbortSignal,
): Promise<void> {
  const target = new URL(presigned.uploadUrl, window.location.href);
  const elsewhere = target.origin !== window.location.origin;
  if (elsewhere && target.pathname.startsWith('/v1/storage/blobs/')) {
    return Promise.reject(
      new ApiError(
        0,
        'cross_origin',
        `The coordinator gives upload addresses at ${target.origin}, but this dashboard is open at ${window.location.origin}, and the dashboard may only send files to its own address. Open the dashboard at ${target.origin}, or set DROVER_PUBLIC_URL to ${window.location.origin} on the coordinator.`,
      ),
    );
  }
  // A bucket answers a browser only when its CORS rules allow this page's origin.
  const failed = elsewhere
    ? `The file could not be sent to the store at ${target.origin}: the connection failed or was refused. The dashboard sends files to the bucket of DROVER_STORAGE_URL, whose CORS rules must allow PUT from ${window.location.origin}; send files to another bucket with the API or the drover command line`
    : `The file could not be sent to ${target.origin}: the connection failed`;
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(presigned.method, target.href);
    for (const [name, value] of Object.entries(presigned.headers)) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (event) =>
      onProgress({ loaded: event.loaded, total: event.lengthComputable ? event.total : blob.size });
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress({ loaded: blob.size, total: blob.size });
        resolve();
      } else reject(putError(xhr));
    };
    xhr.onerror = () => reject(new ApiError(0, UNREACHABLE, failed));
    xhr.onabort = () => reject(new UploadCancelled());
    const abort = () => xhr.abort();
    signal.addEventListener('abort', abort, { once: true });
    xhr.onloadend = () => signal.removeEventListener('abort', abort);
    xhr.send(blob);
  });
}

/** The store's refusal of the PUT (413 too large, 403 an expired URL...) as an ApiError. */
function putError(xhr: XMLHttpRequest): ApiError {
  let body: { code?: unknown; message?: unknown } = {};
  try {
    body = JSON.parse(xhr.responseText) as typeof body;
  } catch {
    // Not JSON (another store): the status says it.
  }
  return new ApiError(
    xhr.status,
    typeof body.code === 'string' ? body.code : 'error',
    typeof body.message === 'string' ? body.message : `The store answered ${xhr.status} ${xhr.statusText}`,
  );
}
