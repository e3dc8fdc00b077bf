import { FILE_REF_TYPE, looksLikeFileRef, type InputFileRef, type JobAssignment } from '@drover/shared';
import type { AgentFileDownload } from '../files/view.js';

/** What the sender needs of the files service. */
export interface AgentDownloads {
  agentDownloads(orgId: string, fileIds: readonly string[]): Promise<Map<string, AgentFileDownload>>;
}

/** The ids of a job's input files: its top-level FileRef params. */
export function inputFileIds(params: Record<string, unknown>): string[] {
  const ids: string[] = [];
  for (const value of Object.values(params)) {
    if (looksLikeFileRef(value) && typeof value.id === 'string') ids.push(value.id);
  }
  return ids;
}

/**
 * The assignment as sent to the agent (docs/agent-protocol.md §6.2): each input FileRef of its
 * params gets a fresh `downloadUrl` (with `expiresInSeconds`) and what the agent verifies the
 * download against (`size`, `sha256`, `filename`, `contentType`). Called at every send, so a
 * redelivered job carries new URLs; the stored params stay `{__type, id}`. A file that is no
 * longer active (deleted or expired since the job was accepted) is sent without a URL: the agent
 * then fails the job before its first step, saying the file is no longer available.
 */
export async function withFreshDownloadUrls(
  files: AgentDownloads,
  orgId: string,
  assignment: JobAssignment,
): Promise<JobAssignment> {
  const ids = inputFileIds(assignment.params);
  if (ids.length === 0) return assignment;
  const downloads = await files.agentDownloads(orgId, ids);
  const params: Record<string, unknown> = { ...assignment.params };
  for (const [name, value] of Object.entries(assignment.params)) {
    if (!looksLikeFileRef(value) || typeof value.id !== 'string') continue;
    const download = downloads.get(value.id);
    const ref: InputFileRef = { __type: FILE_REF_TYPE, id: value.id };
    if (download) {
      ref.downloadUrl = download.downloadUrl;
      ref.expiresInSeconds = download.expiresInSeconds;
      ref.size = download.size;
      ref.sha256 = download.sha256;
      ref.filename = download.filename;
      ref.contentType = download.contentType;
    }
    params[name] = ref;
  }
  return { ...assignment, params };
}
