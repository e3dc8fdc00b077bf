import { Cron } from 'croner';

/** Cron schedules of triggers: standard 5-field expressions evaluated in an IANA time zone. */

export const DEFAULT_CRON_TIMEZONE = 'UTC';
export const MAX_CRON_EXPRESSION_LENGTH = 256;

/** The outcome of checking an expression: its normalized form, or why it is refused. */
export type CronCheck = { ok: true; expression: string } | { ok: false; reason: string };

/**
 * Checks a standard 5-field expression (minute hour day-of-month month day-of-week; names such as
 * `MON` and `JAN`, lists, ranges and `*\/n` steps). Nicknames (`@daily`), seconds and year fields
 * are refused, and so is an expression that can never fire (`0 0 31 2 *`). The normalized form
 * separates the fields by one space.
 */
export function checkCronExpression(expression: string): CronCheck {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 || fields.some((f) => f.startsWith('@'))) {
    return {
      ok: false,
      reason: `must be a standard 5-field cron expression (minute hour day-of-month month day-of-week), got ${fields.length === 1 && fields[0] === '' ? 'an empty string' : `${fields.length} field(s)`}`,
    };
  }
  const normalized = fields.join(' ');
  let next: Date | null;
  try {
    const cron = new Cron(normalized, { paused: true, mode: '5-part', timezone: DEFAULT_CRON_TIMEZONE });
    // Any 5-field schedule recurs within a few years; none in that span means it never fires.
    next = cron.nextRun(new Date(Date.UTC(2000, 0, 1)));
    cron.stop();
  } catch (error) {
    const detail = error instanceof Error ? error.message.replace(/^CronPattern:\s*/, '') : String(error);
    return { ok: false, reason: `is not a valid cron expression: ${detail}` };
  }
  if (next === null) return { ok: false, reason: `never fires (\`${normalized}\` matches no date)` };
  return { ok: true, expression: normalized };
}

/**
 * The canonical name of an IANA time zone this runtime knows (`utc` gives `UTC`,
 * `europe/paris` gives `Europe/Paris`), or null for an unknown zone or a bare UTC offset.
 */
export function canonicalTimeZone(zone: string): string | null {
  // Node may accept bare offsets (`+02:00`) as zones; the spec asks for IANA names.
  if (!/^[A-Za-z]/.test(zone) || zone.length > 64) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}
