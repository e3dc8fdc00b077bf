/**
 * A pino log record as one readable line, for a person at a terminal: `drover-agent logs` and the
 * agent's `run` in a terminal, and the coordinator's log on a terminal.
 */
import { showControls } from './visible-controls.js';
import { shortId } from './short-id.js';

/** pino's numeric levels and their names. */
export const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;
export type LevelName = keyof typeof LEVELS;
export const LEVEL_NAMES = Object.keys(LEVELS) as LevelName[];

/** A level name (`warn`, `WARNING`, `err`...) as its number, or null when unknown. */
export function levelNumber(name: string): number | null {
  const key = name.trim().toLowerCase();
  const aliases: Record<string, LevelName> = { warning: 'warn', err: 'error', crit: 'fatal', critical: 'fatal' };
  const level = (LEVEL_NAMES as string[]).includes(key) ? (key as LevelName) : aliases[key];
  return level ? LEVELS[level] : null;
}

/** The level of a record, as a number (pino writes numbers; a label is accepted too). */
export function recordLevel(record: LogRecord): number {
  if (typeof record.level === 'number') return record.level;
  if (typeof record.level === 'string') return levelNumber(record.level) ?? LEVELS.info;
  return LEVELS.info;
}

export interface LogRecord {
  level?: number | string;
  time?: number | string;
  msg?: string;
  jobId?: string;
  workflow?: string;
  workflowName?: string;
  err?: { message?: string; stack?: string; type?: string };
  [key: string]: unknown;
}

export interface FormatOptions {
  /** ANSI colors (only on a terminal). */
  color?: boolean;
  /** Times in UTC instead of the machine's time zone. */
  utc?: boolean;
  /** Print error stacks under the line (default: only the error's message). */
  stacks?: boolean;
  /** Fields left out of the line (such as a logger's `name`, the same on every line). */
  hide?: readonly string[];
}

/** Fields shown in their own place, or not at all. */
const SHOWN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'jobId', 'workflow', 'workflowName', 'err', 'v']);

const COLORS = { red: 31, yellow: 33, green: 32, cyan: 36, gray: 90, magenta: 35 } as const;
const paint = (on: boolean | undefined, color: keyof typeof COLORS, text: string): string =>
  on ? `\u001b[${COLORS[color]}m${text}\u001b[39m` : text;

/**
 * One log record as a line for a person at a terminal:
 * `2026-11-22 10:31:02  INFO  job …e3f40516 deploy: step 2 (build) exited with code 3`
 * then the remaining fields as `key=value`, and an error's message (and stack, when asked).
 */
export function formatRecord(record: LogRecord, options: FormatOptions = {}): string {
  const level = recordLevel(record);
  const label = levelLabel(level);
  const levelColor =
    level >= LEVELS.error ? 'red' : level >= LEVELS.warn ? 'yellow' : level >= LEVELS.info ? 'green' : 'gray';
  let line = `${formatTime(record.time, options.utc)}  ${paint(options.color, levelColor, label.padEnd(5))}  `;
  const workflow = typeof record.workflow === 'string' ? record.workflow : record.workflowName;
  if (typeof record.jobId === 'string') {
    const job = `job ${shortId(record.jobId)}${typeof workflow === 'string' ? ` ${workflow}` : ''}:`;
    line += `${paint(options.color, 'cyan', inLine(job))} `;
  } else if (typeof workflow === 'string') {
    line += `${paint(options.color, 'cyan', `${inLine(workflow)}:`)} `;
  }
  line += typeof record.msg === 'string' ? inLine(record.msg) : '';
  const extras = Object.keys(record)
    .filter((key) => !SHOWN.has(key) && !options.hide?.includes(key) && record[key] !== undefined)
    .map((key) => `${key}=${formatValue(record[key])}`);
  if (extras.length > 0) line += `  ${paint(options.color, 'gray', inLine(extras.join(' ')))}`;
  const err = record.err;
  if (err && typeof err === 'object') {
    if (options.stacks && typeof err.stack === 'string') {
      line += `\n${paint(options.color, 'gray', showControls(err.stack).replace(/^/gm, '    '))}`;
    } else if (typeof err.message === 'string' && !line.includes(inLine(err.message))) {
      line += `  ${paint(options.color, 'red', `(${inLine(err.message)})`)}`;
    }
  }
  return line;
}

/** A field's text as the line shows it: its control characters, line breaks included, as `\xHH`. */
const inLine = (text: string) => showControls(text, { lineBreaks: false });

export function levelLabel(level: number): string {
  for (const name of [...LEVEL_NAMES].reverse()) if (level >= LEVELS[name]) return name.toUpperCase();
  return 'TRACE';
}

/** `2026-11-22 10:31:02` in the machine's time zone (or UTC). */
export function formatTime(time: unknown, utc = false): string {
  const date = typeof time === 'number' || typeof time === 'string' ? new Date(time) : null;
  if (!date || Number.isNaN(date.getTime())) return '????-??-?? ??:??:??';
  const p = (n: number) => String(n).padStart(2, '0');
  if (utc) {
    return `${date.getUTCFullYear()}-${p(date.getUTCMonth() + 1)}-${p(date.getUTCDate())} ${p(date.getUTCHours())}:${p(date.getUTCMinutes())}:${p(date.getUTCSeconds())}`;
  }
  return `${date.getFullYear()}-${p(date.getMonth() + 1)}-${p(date.getDate())} ${p(date.getHours())}:${p(date.getMinutes())}:${p(date.getSeconds())}`;
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  const json = JSON.stringify(value);
  return json.length > 200 ? `${json.slice(0, 200)}…` : json;
}
