import { CliError } from './errors.js';

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
const DURATION = /^(?:\d+(?:\.\d+)?[smhd])+$/;
const PART = /(\d+(?:\.\d+)?)([smhd])/g;

/**
 * A duration given on the command line, in milliseconds: `30s`, `5m`, `2h`, `1d`, a combination
 * (`1h30m`) or a number of seconds (`90`). `what` names the option in the error. Zero is refused
 * unless `zero` allows it (a soak of `0`: no wait).
 */
export function parseDuration(text: string, what: string, options: { zero?: boolean } = {}): number {
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
  return ms;
}
