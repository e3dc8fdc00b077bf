/**
 * `text` cut to at most `max` UTF-16 units (what a field's limit and a chat platform's count), an
 * ellipsis marking the cut; a surrogate pair is never split, so the cut text stays Unicode text.
 */
export function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 1) return text.slice(0, Math.max(0, max));
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}
