/**
 * How many characters a text has as the API's limits count them: Unicode code points, as JSON
 * Schema's `maxLength` does (an emoji is one, not the two UTF-16 units of `string.length`).
 */
export function characterCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
