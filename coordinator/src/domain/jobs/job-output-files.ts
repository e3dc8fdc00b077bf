import { isUuid } from '../../util/ids.js';
import { looksLikeFileRef, storedFileRef } from '@drover/shared';
import type { StoredFile } from '../model/files.js';

/** What the finish check needs of the files service. */
export interface ActiveFiles {
  findActiveManyInOrg(orgId: string, fileIds: readonly string[]): Promise<StoredFile[]>;
}

export interface DroppedFileRef {
  key: string;
  /** The id the agent sent (when it sent a usable one). */
  fileId: string | null;
  reason: string;
}

/**
 * The output of a finished job with its FileRefs checked (docs/agent-protocol.md §6.6): a
 * top-level value `{__type: 'FileRef', id}` must name an active file that the agent uploaded for
 * this very job; it is stored as `{__type: 'FileRef', id}` (no URL: a caller asks for one by id).
 * A FileRef that does not qualify is left out of the output and reported through `dropped` (the
 * caller logs it): refusing the whole result would lose the job's outcome for one bad value.
 */
export async function checkOutputFileRefs(
  files: ActiveFiles,
  orgId: string,
  jobId: string,
  output: Record<string, unknown>,
): Promise<{ output: Record<string, unknown>; dropped: DroppedFileRef[] }> {
  const refs = Object.entries(output).filter(([, value]) => looksLikeFileRef(value));
  if (refs.length === 0) return { output, dropped: [] };
  const ids = refs.map(([, value]) => (value as { id?: unknown }).id).filter(isUuid);
  const active = new Map((await files.findActiveManyInOrg(orgId, ids)).map((file) => [file.id, file]));
  const checked: Record<string, unknown> = {};
  const dropped: DroppedFileRef[] = [];
  for (const [key, value] of Object.entries(output)) {
    if (!looksLikeFileRef(value)) {
      checked[key] = value;
      continue;
    }
    const id = value.id;
    if (!isUuid(id)) {
      dropped.push({ key, fileId: null, reason: 'its id is not a file id' });
      continue;
    }
    const file = active.get(id);
    if (!file) dropped.push({ key, fileId: id, reason: 'no active file of the organization has this id' });
    else if (file.jobId !== jobId) dropped.push({ key, fileId: id, reason: 'the file is not an output of this job' });
    else checked[key] = storedFileRef(file.id);
  }
  return { output: checked, dropped };
}
