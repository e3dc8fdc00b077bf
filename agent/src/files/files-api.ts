import { isAgentError } from '../errors.js';
import { answerMessage, isRetryableStatus, signedCall, type HttpAnswer, type SignedCaller } from '../http/client.js';
import type { Backoff } from '../util/backoff.js';
import { TransferError } from './transfer-error.js';

/**
 * The agent's signed file calls (docs/agent-protocol.md §6.6): output files of a job are created
 * and completed through them; a fresh URL for an input file is asked when the one the job event
 * carried was refused (it expires while the job waits in the queue).
 */
export interface FilesApi {
  createOutputFile(jobId: string, file: NewOutputFile): Promise<PresignedUpload>;
  completeOutputFile(jobId: string, fileId: string): Promise<void>;
  inputFile(jobId: string, fileId: string): Promise<InputFileDownload>;
}

/** What moving a job's files needs, its inputs or its outputs alike. */
export interface JobFilesRequest {
  jobId: string;
  workspace: string;
  api: FilesApi;
  /** Aborts on shutdown and when the job's time is up. */
  signal: AbortSignal;
  /** A line of the job's log (the agent's own, `system`). */
  log(text: string): void;
  /** Masks secret values in what is sent or shortened (the job's masker; absent: nothing is masked). */
  mask?: (text: string) => string;
  /** Transfer attempts per file. */
  attempts?: number;
  backoff?: Backoff;
}

export interface NewOutputFile {
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
}

export interface PresignedUpload {
  fileId: string;
  uploadUrl: string;
  method: string;
  headers: Record<string, string>;
  expiresInSeconds: number;
}

export interface InputFileDownload {
  downloadUrl: string;
  expiresInSeconds: number;
  size: number;
  sha256: string;
  filename: string;
  contentType: string;
}

const jobPath = (jobId: string) => `/v1/agent/jobs/${encodeURIComponent(jobId)}`;

export function signedFilesApi(caller: SignedCaller): FilesApi {
  return {
    async createOutputFile(jobId, file) {
      const answer = await call(caller, 'POST', `${jobPath(jobId)}/files`, file, 201, 'creating the file record');
      const body = answer.body as Partial<PresignedUpload> | null;
      if (
        typeof body?.fileId !== 'string' ||
        typeof body.uploadUrl !== 'string' ||
        typeof body.method !== 'string' ||
        typeof body.headers !== 'object' ||
        body.headers === null
      ) {
        throw new TransferError('final', 'the coordinator answered the file record request in an unknown shape');
      }
      const headers = Object.fromEntries(
        Object.entries(body.headers).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
      );
      return {
        fileId: body.fileId,
        uploadUrl: body.uploadUrl,
        method: body.method,
        headers,
        expiresInSeconds: Number(body.expiresInSeconds ?? 0),
      };
    },
    async completeOutputFile(jobId, fileId) {
      await call(
        caller,
        'POST',
        `${jobPath(jobId)}/files/${encodeURIComponent(fileId)}/complete`,
        undefined,
        200,
        'completing the upload',
      );
    },
    async inputFile(jobId, fileId) {
      const answer = await call(
        caller,
        'GET',
        `${jobPath(jobId)}/inputs/${encodeURIComponent(fileId)}`,
        undefined,
        200,
        'asking for a fresh download URL',
      );
      const body = answer.body as Partial<InputFileDownload> | null;
      if (typeof body?.downloadUrl !== 'string' || typeof body.size !== 'number' || typeof body.sha256 !== 'string') {
        throw new TransferError('final', 'the coordinator answered the download URL request in an unknown shape');
      }
      return {
        downloadUrl: body.downloadUrl,
        expiresInSeconds: Number(body.expiresInSeconds ?? 0),
        size: body.size,
        sha256: body.sha256,
        filename: typeof body.filename === 'string' ? body.filename : '',
        contentType: typeof body.contentType === 'string' ? body.contentType : '',
      };
    },
  };
}

/**
 * A signed call expecting `ok`; the network, 401, 408, 429 and 5xx are `retry`, other answers
 * `final`; no connection, 502, 503 and 504 are the coordinator away (TransferError).
 */
async function call(
  caller: SignedCaller,
  method: string,
  path: string,
  body: unknown,
  ok: number,
  what: string,
): Promise<HttpAnswer> {
  let answer: HttpAnswer;
  try {
    answer = await signedCall(caller, method, path, body);
  } catch (error) {
    if (isAgentError(error)) {
      throw new TransferError('retry', `${what}: ${error.message}`, {
        cause: error,
        coordinatorAway: error.code === 'unreachable',
      });
    }
    throw error;
  }
  if (answer.status === ok) return answer;
  throw new TransferError(
    isRetryableStatus(answer.status) ? 'retry' : 'final',
    `${what}: the coordinator answered HTTP ${answer.status}: ${answerMessage(answer)}`,
    { coordinatorAway: answer.status === 502 || answer.status === 503 || answer.status === 504 },
  );
}
