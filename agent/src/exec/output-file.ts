import { constants as fsConstants, type Stats } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';

/** At most this many output keys are kept (the coordinator's limit). */
export const MAX_OUTPUT_KEYS = 256;
/**
 * The largest output a job reports, as JSON: well inside the coordinator's default body limit
 * (1 MiB) with the rest of the finish report. Larger results belong in a `file:` output.
 */
export const MAX_OUTPUT_BYTES = 256 * 1024;

/**
 * The most of the `$DROVER_OUTPUT` file the agent reads (1 MiB): four times the output's own
 * limit, for comments and keys written again. The read is bounded, whatever a step wrote.
 */
export const MAX_OUTPUT_FILE_BYTES = 1024 * 1024;

const KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
/**
 * Keys the coordinator refuses in any JSON body (its parser guards against prototype pollution),
 * and with them the whole result of the job. (It refuses `constructor` only holding `prototype`,
 * which a text value never does.)
 */
const REFUSED_KEYS: ReadonlySet<string> = new Set(['__proto__']);

export interface ParsedOutput {
  values: Record<string, string>;
  /** One message per line that could not be read, naming the line. */
  warnings: string[];
}

/**
 * Reads the `$DROVER_OUTPUT` file: `key=value` lines, the value being everything after the first
 * `=` (kept as written). Blank lines and lines starting with `#` are skipped; the last write of a
 * key wins. A line without `=` or with an unusable key (`__proto__` included) is skipped with a
 * warning, which quotes it shortened, after `mask` (so that a secret value is never cut in two
 * before it is masked).
 */
export function parseOutputFile(text: string, mask: (text: string) => string = (t) => t): ParsedOutput {
  const values: Record<string, string> = Object.create(null) as Record<string, string>;
  const warnings: string[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, index) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const eq = line.indexOf('=');
    const where = `$DROVER_OUTPUT line ${index + 1}`;
    if (eq === -1) {
      warnings.push(`${where} is not key=value and was ignored: ${JSON.stringify(clip(mask(line)))}`);
      return;
    }
    const key = line.slice(0, eq).trim();
    if (!KEY.test(key)) {
      warnings.push(
        `${where} has an unusable key ${JSON.stringify(clip(mask(key)))} (expected letters, digits, _ . -, ` +
          'not starting with a digit) and was ignored',
      );
      return;
    }
    if (REFUSED_KEYS.has(key)) {
      warnings.push(`${where} has the key ${key}, which the coordinator refuses, and was ignored`);
      return;
    }
    if (!(key in values) && Object.keys(values).length >= MAX_OUTPUT_KEYS) {
      warnings.push(`${where}: more than ${MAX_OUTPUT_KEYS} output keys; ${key} was ignored`);
      return;
    }
    values[key] = line.slice(eq + 1);
  });
  return { values: { ...values }, warnings };
}

const clip = (text: string): string => (text.length > 80 ? `${text.slice(0, 77)}...` : text);

/** The text of `$DROVER_OUTPUT`, or why there is none to take. */
export type OutputFileText = { text: string } | { problem: string };

/** The words for the file in messages: what steps see, not the file's path in the state directory. */
const NAME = '$DROVER_OUTPUT';
const LARGE_RESULTS = 'write large results to a file in the workspace and output `key=file:<path>` instead';
/** Read at most this much at a time. */
const CHUNK_BYTES = 64 * 1024;

/**
 * Reads the output file after the steps: asynchronously, and never more than
 * MAX_OUTPUT_FILE_BYTES + 1 bytes (a step that wrote 600 MB must not hold the agent). The file
 * must still be the regular file the agent made: a step may have replaced it, and a named pipe
 * would keep the read waiting for a writer forever, so it is opened without waiting (O_NONBLOCK)
 * and without following a symbolic link (O_NOFOLLOW), then checked. A file a step removed is no
 * output (not a problem).
 */
export async function readOutputFile(file: string): Promise<OutputFileText> {
  let handle: FileHandle;
  try {
    handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { text: '' };
    if (code === 'ELOOP') return { problem: replaced('a symbolic link') };
    if (code === 'ENXIO') return { problem: replaced('a socket') };
    const reason = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : (code ?? String(error));
    return { problem: `could not read ${NAME}: ${reason}; no output was taken` };
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return { problem: replaced(kindOf(stat)) };
    if (stat.size > MAX_OUTPUT_FILE_BYTES) return { problem: tooLarge(`${stat.size} bytes`) };
    const chunks: Buffer[] = [];
    let total = 0;
    // Up to one byte past the limit: a file that grew since it was measured is caught too.
    while (total <= MAX_OUTPUT_FILE_BYTES) {
      const want = Math.min(CHUNK_BYTES, MAX_OUTPUT_FILE_BYTES + 1 - total);
      const { bytesRead, buffer } = await handle.read(Buffer.alloc(want), 0, want, null);
      if (bytesRead === 0) break;
      chunks.push(buffer.subarray(0, bytesRead));
      total += bytesRead;
    }
    if (total > MAX_OUTPUT_FILE_BYTES) return { problem: tooLarge(`more than ${MAX_OUTPUT_FILE_BYTES} bytes`) };
    return { text: Buffer.concat(chunks, total).toString('utf8') };
  } catch (error) {
    return { problem: `could not read ${NAME}: ${(error as Error).message}; no output was taken` };
  } finally {
    await handle.close().catch(() => {});
  }
}

const tooLarge = (size: string): string =>
  `${NAME} is ${size}, more than the ${MAX_OUTPUT_FILE_BYTES} the agent reads; no output was taken: ${LARGE_RESULTS}`;

const replaced = (kind: string): string =>
  `${NAME} is no longer a regular file but ${kind} (a step replaced it); no output was taken: ` +
  'steps append key=value lines to the file (`echo key=value >> "$DROVER_OUTPUT"`)';

function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a named pipe (FIFO)';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device';
  return 'something else';
}
