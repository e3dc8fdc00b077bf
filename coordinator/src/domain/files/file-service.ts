import type { Config } from '../../config/config.js';
import type { FileListPosition, FileRepository, FileStatus, StoredFile } from '../model/files.js';
import type { StorageBinding, StorageBindingRepository } from '../model/storage-bindings.js';
import { AppError, conflict, forbidden, invalid, notFound } from '../../errors.js';
import {
  UnsupportedBackendError,
  UploadChangedError,
  UploadTooLargeError,
  type StagedUpload,
  type StorageBackend,
  type StorageBackends,
} from '../../storage/backend.js';
import type { LocalBackend } from '../../storage/local-backend.js';
import type { LocalTransfers } from '../../storage/local-transfer.js';
import { batchLoader } from '../../util/batch-loader.js';
import { isoAt, type Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { findGrant } from '../tokens/grants.js';
import type { StorageGrant } from '../model/api-tokens.js';
import { grantCoversBinding, requireStoragePermission, type FileCaller } from './access.js';
import { BindingBackends } from './binding-backends.js';
import { KeyedQueue } from '../../util/keyed-queue.js';
import { FileDeletion, type DeletionLogger } from './deletion.js';
import { parseCleanup, parseFileLabels, type PresignUploadInput } from './file-input.js';
import { newPendingFile, uploadView } from './pending-file.js';
import {
  toFileView,
  type AgentFileDownload,
  type DownloadUrlView,
  type FileView,
  type PresignedUploadView,
} from './view.js';

export type { AgentFileDownload, DownloadUrlView, PresignedUploadView } from './view.js';

/**
 * A PUT started just before its URL expired has as long again as the URL lived, at most this
 * long, to land before the file's staging objects are removed again.
 */
const LATE_UPLOAD_GRACE_MS = 3600_000;
/** setTimeout's largest delay. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** When no PUT to the file's upload URL can land any more (Unix ms). */
function lateUploadsGoneAt(file: StoredFile): number {
  const expires = Date.parse(file.uploadExpiresAt);
  return expires + Math.min(LATE_UPLOAD_GRACE_MS, Math.max(0, expires - Date.parse(file.createdAt)));
}

/** A staged upload that changed or vanished while it was completed: the caller may complete again. */
function changedOr(error: unknown): unknown {
  if (error instanceof UploadChangedError) {
    return conflict('The upload changed while the file was being completed (another PUT): complete it again');
  }
  return error;
}

/** At most this many entries in `GET /storage/files` (docs/storage.md). */
export const MAX_LIST_SIZE = 200;
const SHA256_HEX = /^[0-9a-f]{64}$/;
/**
 * The most files one job may make as its output (docs/agent-protocol.md §6.6): far above what an
 * agent makes (an output holds at most 256 keys, each file tried at most 5 times), so that only
 * an agent gone wrong, or a machine in an attacker's hands, meets it, and its rows stay bounded.
 */
export const MAX_JOB_OUTPUT_FILES = 2048;

export type FileSettings = Pick<Config, 'presignTtlSeconds' | 'maxFileBytes' | 'jobFileTtlSeconds'>;

export interface FileServiceDeps {
  files: FileRepository;
  storageBindings: StorageBindingRepository;
  backends: StorageBackends;
  clock: Clock;
  /** Read at each call (the public URL, hence presigned URLs, is known only once listening). */
  settings: () => FileSettings;
  logger: DeletionLogger;
  /** The local backend's presigned PUT/GET, served by the coordinator (routes/storage-blobs.ts). */
  transfers: LocalTransfers;
  local: LocalBackend;
}

/** Whether an API token may hand a file to a job as an input FileRef. */
export type FileRefLookup =
  | { outcome: 'ok'; file: StoredFile }
  /** Unknown, of another organization, in a deleted binding, or outside the token's storage grant. */
  | { outcome: 'not_found' }
  /** Within the token's grant, but the grant lacks `read`. */
  | { outcome: 'forbidden'; file: StoredFile }
  | { outcome: 'not_active'; file: StoredFile };

export interface FileListFilter {
  bindingId?: string | undefined;
  status?: FileStatus | undefined;
  /** The page after the one that ended at this position (the `x-next-cursor` of the lists). */
  after?: FileListPosition | undefined;
}

export interface JobOutputFileInput {
  orgId: string;
  jobId: string;
  filename: string;
  contentType?: string | undefined;
  size: number;
  sha256: string;
}

/**
 * Stored files (docs/storage.md): the public storage API, the
 * job-file operations the agent endpoints and the job sender use, and the sweeper's deletions.
 * It reaches blobs only through the binding's StorageBackend. Reachable as `ctx.files`.
 */
export class FileService {
  readonly deletion: FileDeletion;
  /** Receives and serves the local backend's blobs (the presigned URLs point here). */
  readonly transfers: LocalTransfers;
  /** The local backend itself (temp-file cleanup by the sweeper). */
  readonly local: LocalBackend;
  private readonly backends: BindingBackends;
  /** The completion in progress of each file (one at a time per file in this process). */
  private readonly completions = new KeyedQueue();
  /**
   * The downloads of the jobs sent in one turn of the event loop, keyed by `[orgId, fileId]` as
   * JSON: a publish's thousands of update jobs, all with one artifact, read it and sign its URL once.
   */
  private readonly download = batchLoader<string, AgentFileDownload>(async (keys) => {
    const byOrg = new Map<string, string[]>();
    for (const key of keys) {
      const [orgId, fileId] = JSON.parse(key) as [string, string];
      const ids = byOrg.get(orgId);
      if (ids) ids.push(fileId);
      else byOrg.set(orgId, [fileId]);
    }
    const out = new Map<string, AgentFileDownload>();
    for (const [orgId, ids] of byOrg) {
      for (const file of await this.d.files.findActiveInOrg(orgId, ids)) {
        const url = await this.issueDownload(file);
        out.set(JSON.stringify([orgId, file.id]), {
          ...url,
          size: file.size ?? 0,
          sha256: file.sha256 ?? '',
          filename: file.filename,
          contentType: file.contentType,
        });
      }
    }
    return out;
  });

  constructor(private readonly d: FileServiceDeps) {
    this.transfers = d.transfers;
    this.local = d.local;
    this.backends = new BindingBackends(d.backends, (bindingId) => d.files.findBinding(bindingId));
    this.deletion = new FileDeletion({
      files: d.files,
      clock: d.clock,
      logger: d.logger,
      backendOf: (bindingId) => this.backends.byId(bindingId),
    });
  }

  // ---- Public API (token with a storage grant) ----------------------------------------------

  /** A pending file in the chosen binding and its upload URL (`write`). */
  async presignUpload(caller: FileCaller, input: PresignUploadInput): Promise<PresignedUploadView> {
    const grant = requireStoragePermission(caller, 'write');
    const binding = await this.chooseBinding(caller, grant, input.bindingId);
    const backend = this.backendForNewFile(binding);
    const id = newId();
    const labels = parseFileLabels(input, id);
    const cleanup = parseCleanup(input);
    const { presignTtlSeconds } = this.d.settings();
    const now = this.d.clock.now();
    const file = newPendingFile({
      id,
      orgId: caller.orgId,
      binding,
      backend,
      ...labels,
      ...cleanup,
      expiresAt: cleanup.ttlSeconds === null ? null : isoAt(now + cleanup.ttlSeconds * 1000),
      origin: 'api',
      createdByTokenId: caller.tokenId,
      createdByUserId: caller.userId,
      jobId: null,
      declared: null,
      now,
      uploadTtlSeconds: presignTtlSeconds,
    });
    if (!(await this.d.files.insert(file))) throw notFound('Storage binding');
    return uploadView(file, backend, presignTtlSeconds);
  }

  /** pending → active once the blob is there; an active file answers again as is (`write`). */
  async complete(caller: FileCaller, fileId: string): Promise<FileView> {
    const grant = requireStoragePermission(caller, 'write');
    const file = await this.visibleFile(caller, grant, fileId);
    return toFileView(await this.finishUpload(file));
  }

  /** A fresh download URL of an active file (`read`). */
  async downloadUrl(caller: FileCaller, fileId: string): Promise<DownloadUrlView> {
    const grant = requireStoragePermission(caller, 'read');
    const file = await this.visibleFile(caller, grant, fileId);
    if (file.status !== 'active') {
      throw conflict(`The file is ${file.status}: only an active file can be downloaded`);
    }
    return this.issueDownload(file);
  }

  /** The file's metadata (`read`). */
  async get(caller: FileCaller, fileId: string): Promise<FileView> {
    const grant = requireStoragePermission(caller, 'read');
    return toFileView(await this.visibleFile(caller, grant, fileId));
  }

  /**
   * Up to 200 files within the token's bindings, newest first (`read`). A `bindingId` outside
   * the grant lists nothing, like a binding without files.
   */
  async list(
    caller: FileCaller,
    filter: FileListFilter,
  ): Promise<{ files: FileView[]; next: FileListPosition | null }> {
    const grant = requireStoragePermission(caller, 'read');
    const page = await this.d.files.list({
      orgId: caller.orgId,
      bindingIds: grant.bindingIds,
      bindingId: filter.bindingId ?? null,
      status: filter.status ?? null,
      after: filter.after ?? null,
      limit: MAX_LIST_SIZE,
    });
    return { files: page.files.map(toFileView), next: page.next };
  }

  /**
   * Deletes the file now (`delete`): `deleted`, or `delete_failed` when the backend refused (the
   * sweeper retries). A file that a release which is not yanked references is 409 `file_in_use`.
   */
  async delete(caller: FileCaller, fileId: string): Promise<FileView> {
    const grant = requireStoragePermission(caller, 'delete');
    const file = await this.visibleFile(caller, grant, fileId);
    const deleted = await this.deletion.deleteNow(file.id);
    if (deleted.status === 'deleted' || deleted.status === 'delete_failed') {
      const backend = await this.backends.byId(file.bindingId);
      if (lateUploadsGoneAt(file) > this.d.clock.now()) {
        this.discardLateUploads(file, backend);
      }
    }
    return toFileView(deleted);
  }

  // ---- Files in jobs -------------------------------------------------------------------------

  /**
   * Checks an input FileRef given by an API token: the file must be visible to the token (its
   * organization, a binding of its storage grant), readable (`read`) and active.
   */
  async lookupForToken(caller: FileCaller, fileId: string): Promise<FileRefLookup> {
    const grant = findGrant(caller.scopes, 'storage');
    if (!grant) return { outcome: 'not_found' };
    const file = await this.d.files.findInOrg(caller.orgId, fileId);
    if (!file || !grantCoversBinding(grant, file.bindingId)) return { outcome: 'not_found' };
    if (!grant.permissions.includes('read')) return { outcome: 'forbidden', file };
    if (file.status !== 'active') return { outcome: 'not_active', file };
    return { outcome: 'ok', file };
  }

  /** The active files of the organization among `fileIds` (their `jobId` tells whose output they are). */
  async findActiveManyInOrg(orgId: string, fileIds: readonly string[]): Promise<StoredFile[]> {
    return this.d.files.findActiveInOrg(orgId, fileIds);
  }

  /** A fresh download URL for an active file (no permission check: the caller did it). */
  async issueDownload(file: StoredFile): Promise<DownloadUrlView> {
    const backend = await this.backends.byId(file.bindingId);
    const expiresInSeconds = this.d.settings().presignTtlSeconds;
    const { url } = await backend.presignDownload(
      {
        id: file.id,
        blobKey: file.blobKey,
        filename: file.filename,
        contentType: file.contentType,
        size: file.size ?? 0,
      },
      expiresInSeconds,
    );
    return { downloadUrl: url, expiresInSeconds };
  }

  /**
   * Download URLs plus size, SHA-256 and filename of the active files among `fileIds`, for a job
   * sent to an agent. Files not active (or unknown) are absent from the map. The calls of one turn
   * of the event loop share one read, and one URL per file.
   */
  async agentDownloads(orgId: string, fileIds: readonly string[]): Promise<Map<string, AgentFileDownload>> {
    const found = await Promise.all(fileIds.map((id) => this.download(JSON.stringify([orgId, id]))));
    const out = new Map<string, AgentFileDownload>();
    for (const [i, download] of found.entries()) if (download) out.set(fileIds[i]!, download);
    return out;
  }

  /**
   * A pending output file of a job in the organization's default binding (`ttl`,
   * DROVER_JOB_FILE_TTL_SECONDS) and its upload URL. The announced size and SHA-256 are kept and
   * checked by completeJobOutputFile.
   */
  async createJobOutputFile(input: JobOutputFileInput): Promise<PresignedUploadView> {
    const { maxFileBytes, jobFileTtlSeconds, presignTtlSeconds } = this.d.settings();
    if (!Number.isSafeInteger(input.size) || input.size < 0 || input.size > maxFileBytes) {
      throw invalid('body.size', `must be an integer from 0 to ${maxFileBytes} (the largest file), got ${input.size}`);
    }
    if (!SHA256_HEX.test(input.sha256)) throw invalid('body.sha256', 'must be 64 lowercase hexadecimal characters');
    if ((await this.d.files.countOfJob(input.jobId)) >= MAX_JOB_OUTPUT_FILES) {
      throw conflict(`The job has made ${MAX_JOB_OUTPUT_FILES} output files, the most a job may make`);
    }
    const binding = (await this.d.storageBindings.listByOrg(input.orgId)).find((b) => b.isDefault);
    if (!binding) throw conflict('The organization has no default storage binding to keep job output files in');
    let backend: StorageBackend;
    try {
      backend = this.backends.of(binding);
    } catch (error) {
      if (error instanceof UnsupportedBackendError) throw conflict(error.message);
      throw error;
    }
    const id = newId();
    const labels = parseFileLabels(input, 'output');
    const now = this.d.clock.now();
    const file = newPendingFile({
      id,
      orgId: input.orgId,
      binding,
      backend,
      ...labels,
      cleanupRule: 'ttl',
      ttlSeconds: jobFileTtlSeconds,
      expiresAt: isoAt(now + jobFileTtlSeconds * 1000),
      origin: 'agent',
      createdByTokenId: null,
      createdByUserId: null,
      jobId: input.jobId,
      declared: { size: input.size, sha256: input.sha256 },
      now,
      uploadTtlSeconds: presignTtlSeconds,
    });
    if (!(await this.d.files.insert(file))) throw notFound('Storage binding');
    return uploadView(file, backend, presignTtlSeconds);
  }

  /**
   * Completes a job's output file. A blob whose size or SHA-256 differ from what was announced is
   * deleted and the call is 422; a file of another job (or organization) is 404.
   */
  async completeJobOutputFile(orgId: string, jobId: string, fileId: string): Promise<FileView> {
    const file = await this.d.files.findInOrg(orgId, fileId);
    if (!file || file.jobId !== jobId) throw notFound('File');
    return toFileView(await this.finishUpload(file));
  }

  /** One sweeper pass: deletes files whose time has come (see FileDeletion.sweepDue). */
  sweepDue(limit?: number): Promise<number> {
    return this.deletion.sweepDue(limit);
  }

  // ---- Internals -----------------------------------------------------------------------------

  /**
   * pending → active. One completion of a file at a time in this process; the row's status is
   * the arbiter: the staged upload is checked (size by the limit first, then its hash, bounded),
   * promoted into the file's blob only while the row is still pending, and the conditional update
   * pending → active decides. A completion that lost to a deletion removes what it promoted.
   */
  private async finishUpload(file: StoredFile): Promise<StoredFile> {
    if (file.status === 'active') return file;
    if (file.status !== 'pending') throw conflict(`The file is ${file.status}; it can no longer be completed`);
    return this.completions.run(file.id, () => this.promoteUpload(file));
  }

  private async promoteUpload(known: StoredFile): Promise<StoredFile> {
    const file = await this.d.files.findInOrg(known.orgId, known.id);
    if (!file) throw notFound('File');
    if (file.status === 'active') return file;
    if (file.status !== 'pending') throw conflict(`The file is ${file.status}; it can no longer be completed`);
    const backend = await this.backends.byId(file.bindingId);
    const target = { id: file.id, blobKey: file.blobKey };
    const { maxFileBytes } = this.d.settings();
    // A job output is read no further than the size its agent announced.
    const limit = file.declaredSize !== null ? Math.min(file.declaredSize, maxFileBytes) : maxFileBytes;
    // A store that does not answer throws StorageUnavailableError (503): the file stays pending,
    // and `complete` can be called again once the store is back.
    let upload: StagedUpload | null;
    try {
      upload = await backend.findUpload(target, limit);
    } catch (error) {
      if (!(error instanceof UploadTooLargeError)) return this.afterLostUpload(file, error);
      await this.deletion.deleteNow(file.id).catch(() => undefined);
      if (file.declaredSize !== null && (error.size === null || error.size <= maxFileBytes)) {
        throw invalid(
          'file',
          `the uploaded file has ${error.size ?? `more than ${limit}`} bytes, not the announced ${file.declaredSize} bytes and ${file.declaredSha256}; it was dropped`,
        );
      }
      // A bucket takes what its presigned URL is sent; the limit is applied here instead.
      throw new AppError(
        'payload_too_large',
        `The uploaded file has ${error.size ?? `more than ${limit}`} bytes, more than the largest file this coordinator keeps (${maxFileBytes}); it was dropped`,
      );
    }
    if (!upload) {
      return this.afterLostUpload(
        file,
        conflict('Nothing has been uploaded for this file yet: PUT it to its uploadUrl first'),
      );
    }
    if (file.declaredSize !== null && (upload.size !== file.declaredSize || upload.sha256 !== file.declaredSha256)) {
      await this.deletion.deleteNow(file.id).catch(() => undefined);
      throw invalid(
        'file',
        `the uploaded file has ${upload.size} bytes and SHA-256 ${upload.sha256}, not the announced ${file.declaredSize} bytes and ${file.declaredSha256}; it was dropped`,
      );
    }
    // Checking may have taken long: promote only while the file is still pending.
    const before = await this.d.files.findInOrg(file.orgId, file.id);
    if (before?.status !== 'pending') return this.lostTo(before);
    try {
      await backend.promote(target, upload);
    } catch (error) {
      return this.afterLostUpload(file, error);
    }
    const now = this.d.clock.now();
    const expiresAt = file.ttlSeconds === null ? file.expiresAt : isoAt(now + file.ttlSeconds * 1000);
    const done = { size: upload.size, sha256: upload.sha256, completedAt: isoAt(now), expiresAt };
    if (await this.d.files.complete(file.id, done)) {
      await backend.discardUploads(target).catch((error: unknown) => {
        this.d.logger.warn({ fileId: file.id, err: error }, 'could not remove the staged uploads of a completed file');
      });
      this.discardLateUploads(file, backend);
      return { ...file, ...done, status: 'active' };
    }
    // Deleted (or completed by another coordinator) meanwhile.
    const current = await this.d.files.findInOrg(file.orgId, file.id);
    if (current?.status !== 'active') {
      // A deletion that ran before the promotion left the promoted blob behind: it goes too.
      await backend.delete(file.blobKey).catch((error: unknown) => {
        this.d.logger.warn(
          { fileId: file.id, err: error },
          'could not remove the blob of a file deleted while completed',
        );
      });
    }
    return this.lostTo(current);
  }

  /**
   * A completion that found no staged upload, or saw it go: another coordinator may have completed
   * the file meanwhile (its completion removes the staged uploads; the lock above is this
   * process's only), and then this one answers as a second `complete` does. Otherwise `error`
   * stands, an upload that changed as a 409 saying to complete again.
   */
  private async afterLostUpload(file: StoredFile, error: unknown): Promise<StoredFile> {
    const current = await this.d.files.findInOrg(file.orgId, file.id);
    if (current?.status === 'active') return current;
    throw changedOr(error);
  }

  /** The answer of a completion that found the file no longer pending. */
  private lostTo(current: StoredFile | null): StoredFile {
    if (current?.status === 'active') return current;
    throw conflict(`The file is ${current?.status ?? 'gone'}; it can no longer be completed`);
  }

  /**
   * A bucket's upload URL works until it expires whatever became of its file: an upload that lands
   * after `complete` or a deletion leaves a staging object, removed once more when the URL has
   * expired (and a PUT started just before has had time to finish). The timer lives in this
   * process only; a file's deletion also removes its staging objects.
   */
  private discardLateUploads(file: StoredFile, backend: StorageBackend): void {
    if (!backend.lateUploads) return;
    const at = lateUploadsGoneAt(file) - this.d.clock.now();
    const timer = setTimeout(
      () => {
        backend.discardUploads({ id: file.id, blobKey: file.blobKey }).catch((error: unknown) => {
          this.d.logger.warn({ fileId: file.id, err: error }, 'could not remove late uploads of a file');
        });
      },
      Math.min(Math.max(at, 0), MAX_TIMER_MS),
    );
    timer.unref();
  }

  /** The file when the token may see it: its organization and a binding of its grant; else 404. */
  private async visibleFile(caller: FileCaller, grant: StorageGrant, fileId: string): Promise<StoredFile> {
    const file = await this.d.files.findInOrg(caller.orgId, fileId);
    if (!file || !grantCoversBinding(grant, file.bindingId)) throw notFound('File');
    return file;
  }

  /**
   * The binding named by `bindingId` (403 when the token may not use it, whether or not it
   * exists: the answer tells nothing about other bindings), or the only binding the token may
   * use (else 422).
   */
  private async chooseBinding(
    caller: FileCaller,
    grant: StorageGrant,
    bindingId: string | undefined,
  ): Promise<StorageBinding> {
    const byToken = caller.tokenId !== null;
    if (bindingId !== undefined) {
      const binding = grantCoversBinding(grant, bindingId)
        ? await this.d.storageBindings.findInOrg(caller.orgId, bindingId)
        : null;
      if (binding) return binding;
      // A token learns nothing about bindings outside its grant; a member may know them all.
      if (byToken) throw forbidden(`This token may not use the storage binding \`${bindingId}\``);
      throw invalid('body.bindingId', 'no storage binding with this id in the organization');
    }
    const all = await this.d.storageBindings.listByOrg(caller.orgId);
    const usable = grant.bindingIds === null ? all : all.filter((b) => grant.bindingIds!.includes(b.id));
    if (usable.length === 1) return usable[0]!;
    if (!byToken) {
      throw invalid(
        'body.bindingId',
        usable.length === 0
          ? 'the organization has no storage binding: an owner creates one first'
          : `is required: the organization has ${usable.length} storage bindings`,
      );
    }
    throw invalid(
      'body.bindingId',
      usable.length === 0
        ? 'this token may use no storage binding (its bindings were deleted)'
        : `is required: this token may use ${usable.length} storage bindings`,
    );
  }

  private backendForNewFile(binding: StorageBinding): StorageBackend {
    try {
      return this.backends.of(binding);
    } catch (error) {
      if (error instanceof UnsupportedBackendError) {
        throw invalid(
          'body.bindingId',
          `the binding uses the ${error.kind} backend, which this coordinator does not support yet`,
        );
      }
      throw error;
    }
  }
}
