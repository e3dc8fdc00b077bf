/**
 * File references in job params and outputs (docs/agent-protocol.md, docs/ota.md).
 *
 * - What a caller sends as the value of a `file` param, and what a job stores:
 *   `{__type: 'FileRef', id}` (a `downloadUrl` sent by the caller is accepted and dropped).
 * - What the agent receives in a `job` event: the same, plus a fresh `downloadUrl` and what the
 *   agent verifies the download against (`size`, `sha256`, `filename`, `contentType`).
 * - What a job's output carries for a file the agent uploaded: `{__type: 'FileRef', id}`, without
 *   a URL; a caller asks for one by id (`GET /v1/storage/files/:id/download-url`).
 */

import { describeValue } from './describe.js';
import { UUID_REGEX } from './uuid.js';

export const FILE_REF_TYPE = 'FileRef';

/** A stored file named by its id. */
export interface FileRef {
  __type: typeof FILE_REF_TYPE;
  id: string;
}

/** An input FileRef as the stream delivers it to the agent. */
export interface InputFileRef extends FileRef {
  /** A presigned GET URL, fresh at every send; absent when the file is no longer available. */
  downloadUrl?: string;
  /** Seconds the URL stays valid from the send. */
  expiresInSeconds?: number;
  size?: number;
  /** Lowercase hex SHA-256 of the content. */
  sha256?: string;
  filename?: string;
  contentType?: string;
}

/** Keys a caller may put in a FileRef param value. */
export const CALLER_FILE_REF_KEYS: readonly string[] = ['__type', 'id', 'downloadUrl'];

/** Any plain object whose `__type` is `FileRef` (its other keys not checked). */
export function looksLikeFileRef(value: unknown): value is { __type: typeof FILE_REF_TYPE } & Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    (value as Record<string, unknown>).__type === FILE_REF_TYPE
  );
}

const SHAPE = 'a FileRef `{"__type": "FileRef", "id": "<file id>"}`';

/**
 * Why `value` is not a FileRef a caller may send (the value of a `file` param), or null: an
 * object with `__type: 'FileRef'`, `id` a UUID, optionally `downloadUrl` (a string, ignored), and
 * no other key.
 */
export function fileRefProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `must be ${SHAPE}, got ${describeShortly(value)}`;
  }
  const v = value as Record<string, unknown>;
  if (v.__type !== FILE_REF_TYPE) return `must be ${SHAPE}: \`__type\` must be \`FileRef\``;
  const extra = Object.keys(v).filter((key) => !CALLER_FILE_REF_KEYS.includes(key));
  if (extra.length > 0) {
    return `must be ${SHAPE}: unknown key${extra.length > 1 ? 's' : ''} ${extra
      .slice(0, 5)
      .map((k) => `\`${k.length > 40 ? `${k.slice(0, 40)}…` : k}\``)
      .join(', ')}`;
  }
  if (typeof v.id !== 'string' || !UUID_REGEX.test(v.id)) {
    return `must be ${SHAPE}: \`id\` must be a file id (a UUID), got ${describeShortly(v.id)}`;
  }
  if (v.downloadUrl !== undefined && typeof v.downloadUrl !== 'string') {
    return `must be ${SHAPE}: \`downloadUrl\`, when sent, must be a string (it is ignored), got ${describeShortly(v.downloadUrl)}`;
  }
  return null;
}

/** The stored form of a checked FileRef: only `__type` and `id` (the id lower-cased). */
export const storedFileRef = (id: string): FileRef => ({ __type: FILE_REF_TYPE, id: id.toLowerCase() });

const describeShortly = (value: unknown): string => (value === undefined ? 'nothing' : describeValue(value));
