import { looksLikeFileRef, storedFileRef, type ParamDefinition } from '@drover/shared';
import { forbidden, validationFailed, type ValidationDetail } from '../../errors.js';
import type { FileCaller } from '../files/access.js';
import type { FileRefLookup } from '../files/file-service.js';

/**
 * Input FileRefs of a trigger run (docs/trigger-runs.md, "Files as params"). A file is
 * given to a job as the value of a parameter the workflow declares with `type: file`:
 * `{__type: 'FileRef', id}` (its shape was checked with the other params). Here each such file is
 * checked against the calling token, after the params and before the job is admitted:
 *
 * - unknown, of another organization, or outside the token's storage grant (the token cannot see
 *   it, so nothing says whether it exists): 422 at `params.<name>`;
 * - visible, but the grant lacks `read`: 403 (whatever else is wrong: rights come first);
 * - visible and readable but not `active` (pending, deleted...): 422.
 *
 * A FileRef anywhere else (an undeclared parameter, or nested inside a value) is a 422: the
 * agent downloads only the files of `file` parameters, so it would silently get no file.
 *
 * The job stores each FileRef as `{__type: 'FileRef', id}`: a `downloadUrl` sent by the caller is
 * dropped; a fresh one is made at every send to the agent (domain/jobs/job-input-files.ts).
 */

/** What this check needs of the files service. */
export interface FileRefLookups {
  lookupForToken(caller: FileCaller, fileId: string): Promise<FileRefLookup>;
}

/** Nested values are searched this deep at most (the params are at most 32 levels anyway). */
const MAX_SEARCH_DEPTH = 40;

/** The params to store (FileRefs reduced to `{__type, id}`), or a 403/422 naming the parameter. */
export async function checkRunFileRefs(
  schema: readonly ParamDefinition[] | null,
  params: Record<string, unknown>,
  caller: FileCaller,
  files: FileRefLookups,
  /** Who gives the files, for the messages: an API token (its storage grant) or a member (the organization's files). */
  giver: 'api_token' | 'member' = 'api_token',
): Promise<Record<string, unknown>> {
  const fileParams = new Set((schema ?? []).filter((p) => p.type === 'file').map((p) => p.name));
  const problems: ValidationDetail[] = [];
  const lookups: { name: string; id: string }[] = [];
  for (const [name, value] of Object.entries(params)) {
    const path = `params.${name}`;
    if (fileParams.has(name)) {
      // Its shape was checked with the other params: an object with `__type: 'FileRef'` and a UUID id.
      lookups.push({ name, id: (value as { id: string }).id.toLowerCase() });
      continue;
    }
    if (looksLikeFileRef(value)) {
      problems.push({
        path,
        message: 'is a FileRef, but the workflow does not declare this parameter with `type: file`',
      });
    } else if (containsFileRef(value, 1)) {
      problems.push({
        path,
        message: 'contains a FileRef; files are accepted only as the whole value of a `type: file` parameter',
      });
    }
  }
  if (lookups.length === 0) {
    if (problems.length > 0) throw validationFailed(problems);
    return params;
  }

  const results = await Promise.all(lookups.map(({ id }) => files.lookupForToken(caller, id)));
  const refused = lookups.find((_, i) => results[i]!.outcome === 'forbidden');
  if (refused) {
    throw forbidden(
      `This API token's storage grant lacks the \`read\` permission needed to give file ${refused.id} ` +
        `to a job (params.${refused.name})`,
    );
  }
  const stored: Record<string, unknown> = { ...params };
  lookups.forEach(({ name, id }, i) => {
    const path = `params.${name}`;
    const result = results[i]!;
    switch (result.outcome) {
      case 'ok':
        stored[name] = storedFileRef(result.file.id);
        return;
      case 'not_found':
        problems.push({
          path,
          message:
            giver === 'api_token'
              ? `file ${id} not found among the files this API token can read (its storage grant must cover the file's binding)`
              : `file ${id} not found among the files of the organization`,
        });
        return;
      case 'not_active':
        problems.push({
          path,
          message: `file ${id} is ${result.file.status}; only an active file (uploaded and completed) can be given to a job`,
        });
        return;
      case 'forbidden':
        return; // thrown above
    }
  });
  if (problems.length > 0) throw validationFailed(problems);
  return stored;
}

/** True when a FileRef-like object sits somewhere inside `value` (not at its top). */
function containsFileRef(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object' || depth > MAX_SEARCH_DEPTH) return false;
  const items = Array.isArray(value) ? value : Object.values(value);
  return items.some((item) => looksLikeFileRef(item) || containsFileRef(item, depth + 1));
}
