/**
 * `Content-Disposition: attachment` naming the stored filename (RFC 6266): an ASCII fallback in
 * `filename="..."` (non-ASCII, quotes, backslashes and control characters replaced by `_`) and
 * the exact name, percent-encoded UTF-8, in `filename*=UTF-8''...`. The filename is a label the
 * uploader chose: it never names anything on the server's disk.
 */
export function attachmentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_') || 'file';
  let encoded: string;
  try {
    encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  } catch {
    return `attachment; filename="${fallback}"`; // not well-formed Unicode (refused at upload anyway)
  }
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
