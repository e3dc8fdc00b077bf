import { CliError } from './errors.js';
import { parseDuration } from './duration.js';

const TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * A moment given on the command line (`--since`, `--until`), as an ISO 8601 UTC timestamp: a date
 * and time (`2026-11-30T08:00:00Z`, `2026-11-30 08:00+01:00`), a date alone (its midnight), or a
 * duration before `now` (`24h`, `7d`, `1h30m`: parseDuration). A date or time without a zone is
 * UTC, as the coordinator's times are. `flag` names the option in the error.
 */
export function parseMoment(text: string, flag: string, now: number): string {
  const value = text.trim();
  const time = TIME.exec(value);
  if (!time) {
    if (/^\d{4}-/.test(value))
      throw new CliError(`${flag}: expected a time such as 2026-11-30T08:00:00Z, got \`${text}\``);
    try {
      return new Date(now - parseDuration(value, flag)).toISOString();
    } catch {
      throw new CliError(
        `${flag}: expected a time (2026-11-30T08:00:00Z, 2026-11-30) or a duration ago (30m, 24h, 7d), got \`${text}\``,
      );
    }
  }
  const [, year, month, day, hour = '00', minute = '00', second = '00', fraction = '', zone = 'Z'] = time;
  const date = new Date(0);
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  const ms = Date.parse(
    `${year}-${month}-${day}T${hour}:${minute}:${second}${fraction.slice(0, 4)}${zone.toUpperCase()}`,
  );
  if (date.getUTCMonth() !== Number(month) - 1 || date.getUTCDate() !== Number(day) || !Number.isFinite(ms)) {
    throw new CliError(`${flag}: no such time: \`${text}\``);
  }
  return new Date(ms).toISOString();
}
