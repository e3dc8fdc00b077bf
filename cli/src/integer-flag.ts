import { CliError } from './errors.js';

/**
 * A whole number given to `flag`, from `min` to `max`: its decimal digits alone (`50`), as a person
 * writes it. What `Number()` would also take is refused, never read as another number than the one
 * meant: `0x10` (16), `1e2` (100), `1.0`, ` 5`, `0b1`, or nothing. The error says the range:
 * ``--limit: expected an integer from 1 to 200, got `0x10` ``.
 */
export function integerFlag(flag: string, value: string, min: number, max: number = Number.MAX_SAFE_INTEGER): number {
  const n = /^\d{1,16}$/.test(value) ? Number(value) : Number.NaN;
  if (Number.isSafeInteger(n) && n >= min && n <= max) return n;
  const range = max === Number.MAX_SAFE_INTEGER ? `a whole number from ${min}` : `an integer from ${min} to ${max}`;
  throw new CliError(`${flag}: expected ${range}, got \`${value}\``);
}
