import type { Dispatcher } from 'undici';
import type { SignedCaller } from '../http/client.js';
import { signedFilesApi, type FilesApi } from './files-api.js';
import { fetchInputFiles, type InputFilesRequest, type InputFilesResult } from './input-files.js';
import { deliverOutputFiles, type OutputFilesRequest, type OutputFilesResult } from './output-files.js';

type Common = 'api' | 'dispatcher';

/** What the executor needs to move a job's files (docs/agent.md, "Files in and out of jobs"). */
export interface JobFileTransfer {
  fetchInputs(req: Omit<InputFilesRequest, Common>): Promise<InputFilesResult>;
  deliverOutputs(req: Omit<OutputFilesRequest, Common>): Promise<OutputFilesResult>;
}

/** The transfer of a daemon: the signed file endpoints of its coordinator. */
export function jobFileTransfer(caller: SignedCaller, api: FilesApi = signedFilesApi(caller)): JobFileTransfer {
  const common: { api: FilesApi; dispatcher?: Dispatcher } = {
    api,
    ...(caller.dispatcher ? { dispatcher: caller.dispatcher } : {}),
  };
  return {
    fetchInputs: (req) => fetchInputFiles({ ...req, ...common }),
    deliverOutputs: (req) => deliverOutputFiles({ ...req, ...common }),
  };
}
