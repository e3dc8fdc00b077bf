import { characterCount } from '@drover/shared';
import { describeValue, invalid, validationFailed, type ValidationDetail } from '../../errors.js';
import { hiddenCharacterProblem } from '../names.js';

/** Limits of presign-upload (docs/storage.md) and the defaults this coordinator chose (docs/storage.md). */
export const MAX_FILENAME_LENGTH = 255;
export const MAX_CONTENT_TYPE_LENGTH = 255;
export const MIN_TTL_SECONDS = 60;
export const MAX_TTL_SECONDS = 90 * 86400;
/** `cleanupRule: 'ttl'` without `ttlSeconds`. */
export const DEFAULT_TTL_SECONDS = 86400;
export const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/** The body of `POST /storage/files/presign-upload` after its JSON schema (types, lengths). */
export interface PresignUploadInput {
  bindingId?: string;
  filename?: string;
  contentType?: string;
  cleanupRule: 'ttl' | 'persistent';
  ttlSeconds?: number;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MEDIA_TYPE = new RegExp(
  `^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|"[^"\\\\\\u0000-\\u001f\\u007f]*"))*$`,
);

const characters = characterCount;

/** A problem with a filename hint, or null. Filenames are labels: they never name a path on disk. */
export function filenameProblem(filename: string): string | null {
  if (filename.length === 0) return 'must not be empty';
  const length = characters(filename);
  if (length > MAX_FILENAME_LENGTH) return `must be at most ${MAX_FILENAME_LENGTH} characters, got ${length}`;
  // C0, DEL and C1 (U+0080 to U+009F; U+009B, CSI, starts a terminal's escape sequence), and the
  // bidirectional embeddings, overrides and isolates that make a name show reordered (names.ts).
  const hidden = hiddenCharacterProblem(filename);
  if (hidden) return hidden;
  if (LONE_SURROGATE.test(filename)) return 'must be valid Unicode text';
  return null;
}

/** A problem with a MIME type such as `text/csv; charset=utf-8`, or null. */
export function contentTypeProblem(contentType: string): string | null {
  const length = characters(contentType);
  if (length > MAX_CONTENT_TYPE_LENGTH) return `must be at most ${MAX_CONTENT_TYPE_LENGTH} characters, got ${length}`;
  if (!MEDIA_TYPE.test(contentType)) return `must be a MIME type such as text/csv, got ${describeValue(contentType)}`;
  return null;
}

/** The filename and content type to store, defaults applied, or a 422 naming each problem. */
export function parseFileLabels(
  input: { filename?: string | undefined; contentType?: string | undefined },
  fallbackName: string,
): { filename: string; contentType: string } {
  const details: ValidationDetail[] = [];
  const filename = input.filename ?? fallbackName;
  const contentType = input.contentType === undefined ? DEFAULT_CONTENT_TYPE : input.contentType.trim();
  const nameProblem = input.filename === undefined ? null : filenameProblem(input.filename);
  if (nameProblem) details.push({ path: 'body.filename', message: nameProblem });
  const typeProblem = input.contentType === undefined ? null : contentTypeProblem(contentType);
  if (typeProblem) details.push({ path: 'body.contentType', message: typeProblem });
  if (details.length > 0) throw validationFailed(details);
  return { filename, contentType };
}

/** The cleanup rule and TTL to store: `ttlSeconds` only with `ttl`, 60 s to 90 days. */
export function parseCleanup(input: Pick<PresignUploadInput, 'cleanupRule' | 'ttlSeconds'>): {
  cleanupRule: 'ttl' | 'persistent';
  ttlSeconds: number | null;
} {
  const { cleanupRule, ttlSeconds } = input;
  if (cleanupRule === 'persistent') {
    if (ttlSeconds !== undefined) {
      throw invalid('body.ttlSeconds', 'applies only with cleanupRule "ttl"; leave it out for a persistent file');
    }
    return { cleanupRule, ttlSeconds: null };
  }
  if (ttlSeconds === undefined) return { cleanupRule, ttlSeconds: DEFAULT_TTL_SECONDS };
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < MIN_TTL_SECONDS || ttlSeconds > MAX_TTL_SECONDS) {
    throw invalid(
      'body.ttlSeconds',
      `must be an integer from ${MIN_TTL_SECONDS} (1 minute) to ${MAX_TTL_SECONDS} (90 days), got ${describeValue(ttlSeconds)}`,
    );
  }
  return { cleanupRule, ttlSeconds };
}
