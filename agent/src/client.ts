/**
 * What other clients of the coordinator reuse from the agent (`@drover/agent/client`): the rule
 * for a coordinator URL, the bounded read of an answer's body, the presigned file transfers (requests, uploads, the kinds of failure
 * and their retries) and an atomic private file write. The `drover` command line moves files with them.
 */
export { isAgentError } from './errors.js';
export { parseCoordinatorUrl } from './http/coordinator-url.js';
export { AnswerTooLarge, readText } from './http/request.js';
export { presignedRequest, type PresignedTarget } from './files/presigned-request.js';
export { uploadFile, type UploadRequest } from './files/upload.js';
export {
  TransferAborted,
  TransferError,
  abortError,
  answerReason,
  discardBody,
  kindOfStatus,
  networkFailure,
  readSmallBody,
  type TransferErrorKind,
} from './files/transfer-error.js';
export { retryTransfer, type TransferRetryOptions } from './files/retry-transfer.js';
export { formatBytes, pause } from './files/format.js';
export { contentTypeOf } from './files/content-type.js';
export { safeFilename } from './files/safe-names.js';
export { writeFileAtomic } from './state/files.js';
export { Backoff } from './util/backoff.js';
