/** `1 device`, `2 devices`: a count with its noun, plural (`plural`, or the noun and an s) unless it is one. */
export function counted(n: number, noun: string, plural = `${noun}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? noun : plural}`;
}
