import type { IncomingHttpHeaders } from 'node:http';
import type { Runtime } from '../runtime.js';

/**
 * When a list's answer has a next page (its `x-next-cursor` header), says on standard error the
 * command that reads it: `command` with the `flags` given (those not undefined, in order) and
 * `--cursor`. Standard output keeps the list alone.
 */
export function sayNextPage(
  rt: Runtime,
  headers: IncomingHttpHeaders,
  what: string,
  command: string,
  flags: Record<string, string | number | undefined>,
): void {
  const next = headers['x-next-cursor'];
  if (typeof next !== 'string' || next === '') return;
  const again = Object.entries(flags)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => ` --${name} ${value}`)
    .join('');
  rt.err(`More ${what} follow: ${command}${again} --cursor ${next}\n`);
}
