export {
  grantCoversBinding,
  memberFileCaller,
  requireStoragePermission,
  systemReaderFileCaller,
  tokenFileCaller,
  type FileCaller,
} from './access.js';
export { ABANDONED_UPLOAD_GRACE_MS, DELETE_LEASE_MS, deleteRetryDelayMs, FileDeletion } from './deletion.js';
export {
  DEFAULT_CONTENT_TYPE,
  DEFAULT_TTL_SECONDS,
  MAX_CONTENT_TYPE_LENGTH,
  MAX_FILENAME_LENGTH,
  MAX_TTL_SECONDS,
  MIN_TTL_SECONDS,
  type PresignUploadInput,
} from './file-input.js';
export {
  FileService,
  MAX_LIST_SIZE,
  type FileListFilter,
  type FileRefLookup,
  type FileServiceDeps,
  type FileSettings,
  type JobOutputFileInput,
} from './file-service.js';
export { createFileService } from './create.js';
export {
  toFileView,
  type AgentFileDownload,
  type DownloadUrlView,
  type FileView,
  type PresignedUploadView,
} from './view.js';
