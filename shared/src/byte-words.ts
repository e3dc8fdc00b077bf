/** A count with its noun, in English: `1 line`, `1,204 lines`. */
export const countOf = (n: number, noun: string): string => `${n.toLocaleString('en-US')} ${noun}${n === 1 ? '' : 's'}`;

/**
 * Bytes in words, as log gap lines say them on the agent and on the coordinator: `512 bytes`,
 * `48.5 KiB`, `16 MiB`.
 */
export function bytesInWords(bytes: number): string {
  if (bytes < 1024) return countOf(bytes, 'byte');
  const units = ['KiB', 'MiB', 'GiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`;
}
