/**
 * `source` on one line with a caret under the character at `position` (0-based; `source.length`
 * points past its end), both indented by two spaces; a long `source` is cut to the `width`
 * characters around the position, an ellipsis marking each cut. Null when the caret could land
 * in the wrong column: the text holds a character a terminal may show wider or narrower than one
 * column (anything but printable ASCII), or the position is outside it.
 */
export function caretUnder(source: string, position: number, width = 72): string | null {
  if (!/^[\x20-\x7e]*$/.test(source)) return null;
  if (!Number.isInteger(position) || position < 0 || position > source.length) return null;
  let start = 0;
  let end = source.length;
  if (source.length > width) {
    start = Math.max(0, Math.min(position - Math.floor(width / 2), source.length - width));
    end = start + width;
  }
  const before = start > 0 ? '…' : '';
  const after = end < source.length ? '…' : '';
  const column = before.length + position - start;
  return `  ${before}${source.slice(start, end)}${after}\n  ${' '.repeat(column)}^\n`;
}
