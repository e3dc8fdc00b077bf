import type { IncomingHttpHeaders } from 'node:http';
import type { Runtime } from '../runtime.js';

/**
 * When a list's answer has a next page (its `x-next-cursor` header), says on standard error the
 * command that reads it: `command` with the `flags` given (those not undefined, in order; a list
 * is the flag once for each value) and `--cursor`, each value quoted for a POSIX shell where it
 * needs it. Standard output keeps the list alone.
 */
export function sayNextPage(
  rt: Runtime,
  headers: IncomingHttpHeaders,
  what: string,
  command: string,
  flags: Record<string, string | number | readonly string[] | undefined>,
): void {
  const next = headers['x-next-cursor'];
  if (typeof next !== 'string' || next === '') return;
  const again = Object.entries(flags)
    .flatMap(([name, value]) =>
      (value === undefined ? [] : typeof value === 'object' ? value : [value]).map((one) => [name, one]),
    )
    .map(([name, one]) => ` --${name} ${shellWord(String(one))}`)
    .join('');
  rt.err(`More ${what} follow: ${command}${again} --cursor ${next}\n`);
}

/** A value as one word of a POSIX shell command: as it is when plain, else single-quoted. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:=,@%+-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
