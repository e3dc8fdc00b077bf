/** At most this many output keys are kept (the coordinator's limit). */
export const MAX_OUTPUT_KEYS = 256;
/**
 * The largest output a job reports, as JSON: well inside the coordinator's default body limit
 * (1 MiB) with the rest of the finish report. Larger results belong in a `file:` output.
 */
export const MAX_OUTPUT_BYTES = 256 * 1024;

const KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

export interface ParsedOutput {
  values: Record<string, string>;
  /** One message per line that could not be read, naming the line. */
  warnings: string[];
}

/**
 * Reads the `$DROVER_OUTPUT` file: `key=value` lines, the value being everything after the first
 * `=` (kept as written). Blank lines and lines starting with `#` are skipped; the last write of a
 * key wins. A line without `=` or with an unusable key is skipped with a warning, which quotes
 * it shortened, after `mask` (so that a secret value is never cut in two before it is masked).
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
    if (!(key in values) && Object.keys(values).length >= MAX_OUTPUT_KEYS) {
      warnings.push(`${where}: more than ${MAX_OUTPUT_KEYS} output keys; ${key} was ignored`);
      return;
    }
    values[key] = line.slice(eq + 1);
  });
  return { values: { ...values }, warnings };
}

const clip = (text: string): string => (text.length > 80 ? `${text.slice(0, 77)}...` : text);
