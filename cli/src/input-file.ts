import { readRegularFile } from '@drover/shared';
import { CliError } from './errors.js';
import type { Runtime } from './runtime.js';

/** The most an input file of the command line (params, a key, a rotation statement) may hold. */
export const MAX_INPUT_BYTES = 1024 * 1024;

/**
 * The text of an input file named on the command line: a regular file of at most 1 MiB. A device,
 * a FIFO or a file too large is refused with a clear error (`<what>: cannot read <file>: it is a
 * device, ...`) rather than read for ever or into memory.
 */
export function readInputFile(file: string, what: string): string {
  try {
    return readRegularFile(file, { maxBytes: MAX_INPUT_BYTES });
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    const why = e.code === 'EINVAL' || e.code === 'EFBIG' ? e.message : (e.code ?? e.message);
    throw new CliError(`${what}: cannot read ${file}: ${why}`);
  }
}

/** The text of an input file, `-` for all of standard input (at most 1 MiB as well). */
export async function readInput(rt: Runtime, file: string, what: string): Promise<string> {
  if (file !== '-') return readInputFile(file, what);
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of rt.stdin) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    total += bytes.length;
    if (total > MAX_INPUT_BYTES) {
      rt.stdin.destroy();
      throw new CliError(`${what}: standard input holds more than ${MAX_INPUT_BYTES} bytes`);
    }
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString('utf8');
}
