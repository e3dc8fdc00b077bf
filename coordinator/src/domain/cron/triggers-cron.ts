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
  if (fields.some((f) => f.includes('+'))) {
    // croner's own switch: with it a date must match day-of-month AND day-of-week, where cron
    // (and every other schedule here) takes a date that matches either.
    return {
      ok: false,
      reason:
        'is not a valid cron expression: `+` is not taken (a date matches when its day-of-month or its day-of-week does, as in standard cron)',
    };
  }
  const outOfRange = rangeProblem(fields);
  if (outOfRange) return { ok: false, reason: `is not a valid cron expression: ${outOfRange}` };
  let next: Date | null;
  try {
    const cron = new Cron(normalized, { paused: true, mode: '5-part', timezone: DEFAULT_CRON_TIMEZONE });
    // Any 5-field schedule recurs within a few years; none in that span means it never fires.
    next = cron.nextRun(new Date(Date.UTC(2000, 0, 1)));
    cron.stop();
  } catch (error) {
    const detail = error instanceof Error ? error.message.replace(/^CronPattern:\s*/, '') : String(error);
    return { ok: false, reason: `is not a valid cron expression: ${parserProblem(detail)}` };
  }
  if (next === null) return { ok: false, reason: `never fires (\`${normalized}\` matches no date)` };
  return { ok: true, expression: normalized };
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

/** Each field's name, range and names, in order; day-of-week 7 is Sunday, as 0. */
const FIELDS = [
  { name: 'minute', min: 0, max: 59, names: null },
  { name: 'hour', min: 0, max: 23, names: null },
  { name: 'day-of-month', min: 1, max: 31, names: null },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES },
  { name: 'day-of-week', min: 0, max: 7, names: DAY_NAMES },
] as const;

/**
 * A number outside its field's range, or a word that is not one of its names, in the field's own
 * terms (`the month field takes 1 to 12, got 13`; `the month field takes 1 to 12 or JAN to DEC,
 * got MON: a day-of-week name, and day-of-week is the fifth field`): the parser's message counts
 * months and days from zero, and says only that a word in the wrong field "contains illegal
 * characters".
 */
function rangeProblem(fields: readonly string[]): string | null {
  for (const [i, field] of fields.entries()) {
    const { name, min, max, names } = FIELDS[i]!;
    const takes = `the ${name} field takes ${min} to ${max}${names ? ` or ${names[0]} to ${names.at(-1)}` : ''}`;
    for (const part of field.split(',')) {
      const [range, step] = part.split('/');
      for (const value of (range ?? '').split('-')) {
        // Words of three letters or more: the parser's own one- and two-letter marks (L, W, LW) are its to check.
        if (/^[A-Za-z]{3,}$/.test(value)) {
          const word = value.toUpperCase();
          if ((names as readonly string[] | null)?.includes(word)) continue;
          if (MONTH_NAMES.includes(word)) return `${takes}, got ${value}: a month name, and month is the fourth field`;
          if (DAY_NAMES.includes(word)) {
            return `${takes}, got ${value}: a day-of-week name, and day-of-week is the fifth field`;
          }
          return `${takes}, got ${value}${names ? ' (names are three letters)' : ''}`;
        }
        if (!/^\d+$/.test(value)) continue;
        const n = Number(value);
        if (n < min || n > max) return `${takes}, got ${value}`;
      }
      if (step !== undefined && /^\d+$/.test(step) && Number(step) < 1) {
        return `the ${name} field's step must be at least 1, got ${step}`;
      }
    }
  }
  return null;
}

/** The parser's names of the fields (its messages use them), as the expression's own. */
const PARSER_FIELDS: Readonly<Record<string, string>> = {
  minute: 'minute',
  hour: 'hour',
  day: 'day-of-month',
  nearestWeekdays: 'day-of-month',
  month: 'month',
  dayOfWeek: 'day-of-week',
};

/** What the parser's marks mean where they may stand, for a mark written where it may not. */
const MARK_HINTS: Readonly<Record<string, string>> = {
  L: ' (L stands alone in day-of-month, the last day; in day-of-week it follows a day, as in 5L, the last Friday)',
  W: ' (W follows a day of the month, as in 15W, the weekday nearest the 15th)',
};

/**
 * The parser's message in the expression's own terms: it names its fields by its inner names
 * (`nearestWeekdays is not a number: 'W'`), counts them from the seconds it adds
 * (`configuration entry 1 (a)` is the minute field) and says `Type: string`.
 */
function parserProblem(message: string): string {
  const notNumber = /^(\w+) is not a number: '(.*)'$/.exec(message);
  if (notNumber) {
    const field = PARSER_FIELDS[notNumber[1]!];
    const value = notNumber[2]!;
    if (field) return `the ${field} field does not take \`${value}\`${MARK_HINTS[value.toUpperCase()] ?? ''}`;
  }
  const entry = /^configuration entry (\d) \((.*)\) contains illegal characters\.?$/.exec(message);
  if (entry) {
    const field = FIELDS[Number(entry[1]) - 1];
    if (field) return `the ${field.name} field does not take \`${entry[2]}\``;
  }
  const nth = /^nth weekday out of range, should be 1-5 or L\. Value: (.*), Type: \w+$/.exec(message);
  if (nth) return `the day-of-week field's # takes 1 to 5 or L (the nth such day of the month), got ${nth[1]}`;
  const invalid = /^Invalid value for (\w+): (.*)$/.exec(message);
  if (invalid && PARSER_FIELDS[invalid[1]!]) {
    const field = FIELDS.find((f) => f.name === PARSER_FIELDS[invalid[1]!])!;
    return `the ${field.name} field takes ${field.min} to ${field.max}, got ${invalid[2]}`;
  }
  return message.replace(/^Syntax error, /, '');
}

/**
 * The canonical name of an IANA time zone this runtime knows (`utc` gives `UTC`,
 * `europe/paris` gives `Europe/Paris`), or null for an unknown zone or a bare UTC offset.
 */
export function canonicalTimeZone(zone: string): string | null {
  // Node may accept bare offsets (`+02:00`) as zones; the spec asks for IANA names.
  if (!/^[A-Za-z]/.test(zone) || zone.length > 64) return null;
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
  return IANA_NAMES[resolved] ?? resolved;
}

/**
 * The zones whose canonical name in ICU (CLDR's, which never changes) is one the IANA database
 * has since replaced: `Europe/Kyiv` resolves to `Europe/Kiev`. Their IANA names are what people
 * write and expect to read back.
 */
const IANA_NAMES: Readonly<Record<string, string>> = {
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Coral_Harbour': 'America/Atikokan',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk',
};
