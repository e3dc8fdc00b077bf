/**
 * Names that come from elsewhere (a file's name given at upload, a param name) turned into one
 * safe path component of the job's workspace. They never decide where a file lands beyond
 * `inputs/<param>/<name>`: no separators, no `.` or `..`, no control characters.
 */

/** A filename's longest length in UTF-8 bytes (the usual file system limit). */
const MAX_NAME_BYTES = 255;

/** C0 and C1 controls, DEL, and the Unicode bidirectional overrides that make names lie on screen. */
// eslint-disable-next-line no-control-regex
const UNSAFE_CHARS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * The last component of `name` (after any `/` or `\`), without unsafe characters and with the
 * spaces around it trimmed, at most 255 bytes (the extension kept); `fallback` when nothing usable
 * is left (empty, `.` or `..`).
 */
export function safeFilename(name: unknown, fallback = 'file'): string {
  if (typeof name !== 'string') return fallback;
  const last = name.split(/[/\\]/).pop() ?? '';
  const cleaned = last.replace(UNSAFE_CHARS, '').trim();
  if (cleaned === '' || /^\.+$/.test(cleaned)) return fallback;
  return truncateName(cleaned);
}

/** The directory for a param's input files: the name when it is a plain name, else made one. */
export function safeParamDir(name: string): string {
  if (/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(name)) return name;
  const replaced = name.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^[.-]+/, '_');
  return replaced === '' ? 'param' : replaced.slice(0, 128);
}

function truncateName(name: string): string {
  if (Buffer.byteLength(name) <= MAX_NAME_BYTES) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
  let stem = name.slice(0, name.length - ext.length);
  while (Buffer.byteLength(stem + ext) > MAX_NAME_BYTES) stem = [...stem].slice(0, -1).join('');
  return stem + ext;
}
