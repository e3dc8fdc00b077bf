import { CliError } from './errors.js';

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
const DURATION = /^(?:\d+(?:\.\d+)?[smhd])+$/;
const PART = /(\d+(?:\.\d+)?)([smhd])/g;

export interface DurationBounds {
  /** Zero is allowed (a soak of `0`: no wait); otherwise it is refused. */
  zero?: boolean;
  /** The shortest value taken, in milliseconds: the coordinator's own bound, checked here first. */
  minMs?: number;
  /** The longest value taken, in milliseconds. */
  maxMs?: number;
}

/**
 * A duration given on the command line, in milliseconds: `30s`, `5m`, `2h`, `1d`, a combination
 * (`1h30m`) or a number of seconds (`90`). `what` names the option in the error. Zero is refused
 * unless `zero` allows it (a soak of `0`: no wait); a value outside `minMs` to `maxMs` is refused
 * naming the bound (`--ttl: must be at least 1m (60 s), got `30s``).
 */
export function parseDuration(text: string, what: string, options: DurationBounds = {}): number {
  const value = text.trim().toLowerCase();
  let seconds = 0;
  if (/^\d+(?:\.\d+)?$/.test(value)) seconds = Number(value);
  else if (DURATION.test(value)) {
    for (const [, amount, unit] of value.matchAll(PART)) {
      seconds += Number(amount) * UNIT_SECONDS[unit as keyof typeof UNIT_SECONDS];
    }
  } else {
    throw new CliError(`${what}: expected a duration such as 30s, 5m, 2h or 1d, got \`${text}\``);
  }
  const ms = Math.round(seconds * 1000);
  if (ms === 0 && options.zero) return 0;
  if (ms <= 0) throw new CliError(`${what}: must be longer than zero, got \`${text}\``);
  if (options.minMs !== undefined && ms < options.minMs) {
    throw new CliError(`${what}: must be at least ${describeDuration(options.minMs)}, got \`${text}\``);
  }
  if (options.maxMs !== undefined && ms > options.maxMs) {
    throw new CliError(`${what}: must be at most ${describeDuration(options.maxMs)}, got \`${text}\``);
  }
  return ms;
}

/** A bound as it is written on the command line, in its largest whole unit: `1m (60 s)`, `10m (600 s)`, `90d`. */
function describeDuration(ms: number): string {
  const seconds = ms / 1000;
  const [unit, size] = Object.entries(UNIT_SECONDS)
    .reverse()
    .find(([, size]) => seconds % size === 0) ?? ['s', 1];
  const written = `${seconds / size}${unit}`;
  return unit === 's' || seconds >= 3600 ? written : `${written} (${seconds} s)`;
}
