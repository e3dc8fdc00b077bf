import type { SignedCaller } from '../http/client.js';
import type { DownloadSettings } from './download.js';
import { signedFilesApi, type FilesApi } from './files-api.js';
import { fetchInputFiles, type InputFilesRequest, type InputFilesResult } from './input-files.js';
import { deliverOutputFiles, type OutputFilesRequest, type OutputFilesResult } from './output-files.js';

type Common = 'api';

/** What the executor needs to move a job's files (docs/agent.md, "Files in and out of jobs"). */
export interface JobFileTransfer {
  fetchInputs(req: Omit<InputFilesRequest, Common>): Promise<InputFilesResult>;
  deliverOutputs(req: Omit<OutputFilesRequest, Common>): Promise<OutputFilesResult>;
}

/** Told the bytes of the files moved (the agent's counters, docs/metrics.md). */
export type TransferBytes = (direction: 'download' | 'upload', bytes: number) => void;

/** The transfer of a daemon: the signed file endpoints of its coordinator. */
export function jobFileTransfer(
  caller: SignedCaller,
  api: FilesApi = signedFilesApi(caller),
  moved: TransferBytes = () => {},
  downloads?: DownloadSettings,
): JobFileTransfer {
  const common = { api };
  return {
    fetchInputs: async (req) => {
      const result = await fetchInputFiles({ ...req, ...common, ...(downloads ? { downloads } : {}) });
      if (result.ok) moved('download', result.bytes);
      return result;
    },
    deliverOutputs: async (req) => {
      const result = await deliverOutputFiles({ ...req, ...common });
      moved('upload', result.bytes);
      return result;
    },
  };
}
