/**
 * `Content-Disposition: attachment` naming the stored filename (RFC 6266): an ASCII fallback in
 * `filename="..."` (non-ASCII, quotes, backslashes and control characters replaced by `_`) and
 * the exact name, percent-encoded UTF-8, in `filename*=UTF-8''...`. The filename is a label the
 * uploader chose: it never names anything on the server's disk. Only its base name is sent (what
 * follows the last `/` or `\`), and a name of dots alone becomes `file`, so that no client is
 * offered a path to save to (RFC 6266 §4.3).
 */
export function attachmentDisposition(stored: string): string {
  const filename = baseName(stored);
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_') || 'file';
  let encoded: string;
  try {
    encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  } catch {
    return `attachment; filename="${fallback}"`; // not well-formed Unicode (refused at upload anyway)
  }
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

function baseName(name: string): string {
  const base = name.slice(Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\')) + 1);
  return /^\.*$/.test(base) ? 'file' : base;
}
