import pino, { type Logger } from 'pino';
import { formatRecord, withNewCauses, type LogRecord } from '@drover/shared';
import type { LogFormat, LogLevel } from './config/config.js';

/**
 * Where a credential could sit in a logged object. Request lines never carry headers or query
 * strings (http/app.ts); these paths are the second line of defence.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-signature"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  'headers["x-signature"]',
  '*.headers.authorization',
  '*.headers.cookie',
  'authorization',
  'password',
  '*.password',
  'passwordHash',
  '*.passwordHash',
  'token',
  '*.token',
  'enrollmentToken',
  '*.enrollmentToken',
  'privateKey',
  '*.privateKey',
  'secrets',
  '*.secrets',
  // A parse error of Node's HTTP server holds the request's bytes as they came.
  'rawPacket',
  '*.rawPacket',
];

export interface LoggerOptions {
  /**
   * `json`: pino's JSON lines, written as they are (the default); `pretty`: one readable line per
   * record, as `drover-agent logs` prints them; `auto`: pretty when standard output is a terminal.
   */
  format?: LogFormat;
  /** Where the lines go (default: standard output). */
  destination?: pino.DestinationStream;
  /** ANSI colours in pretty lines (default: on a terminal, unless NO_COLOR is set). */
  color?: boolean;
}

/**
 * The coordinator's one logger, credentials redacted. JSON lines go to standard output through
 * pino's own destination, untouched; pretty lines are made from them in this thread (no
 * transport, no worker thread) and written synchronously.
 */
export function createLogger(level: LogLevel, options: LoggerOptions = {}): Logger {
  const tty = process.stdout.isTTY === true;
  const format = options.format === 'auto' ? (tty ? 'pretty' : 'json') : (options.format ?? 'json');
  const settings: pino.LoggerOptions = {
    name: 'drover-coordinator',
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: { err: withNewCauses(pino.stdSerializers.err) },
  };
  if (format === 'json') return pino(settings, options.destination ?? logDestination(1));
  const color = options.color ?? (tty && !process.env.NO_COLOR);
  const out = options.destination ?? process.stdout;
  return pino(settings, {
    write(line: string): void {
      out.write(`${readable(line, color)}\n`);
    },
  });
}

/** Lines held while the log cannot be written; past this, new lines are dropped. */
const MAX_HELD_LOG_BYTES = 16 * 1024 * 1024;
/** Whether the last write of the log failed (a full disk under a log file): a flush would never end. */
let unwritable = false;
export const logUnwritable = (): boolean => unwritable;

/**
 * The log's destination on `fd`, written synchronously as pino's default is, that survives being
 * unwritable: a full disk under a log file (`ENOSPC`), a file size limit (`EFBIG`), a reader gone
 * (`EPIPE`). pino's destination would throw its error into whatever was logging (then the crash
 * handler's fatal line, which pino flushes, retried for ever: the coordinator froze, deaf to
 * SIGTERM).
 * Here the lines wait, up to 16 MiB, and are written once the log takes them again; past that,
 * new lines are dropped. Said once on standard error.
 */
export function logDestination(fd: number): pino.DestinationStream {
  const destination = pino.destination({ fd, sync: true, maxLength: MAX_HELD_LOG_BYTES });
  destination.on('error', (error: NodeJS.ErrnoException) => {
    if (unwritable) return;
    unwritable = true;
    process.stderr.write(
      `drover-coordinator: cannot write its log (${error.code ?? error.message}): lines wait, then are dropped, until it can\n`,
    );
  });
  destination.on('write', () => {
    unwritable = false;
  });
  // pino flushes after every fatal line, and sonic-boom's flush retries a failing write for ever.
  // Written synchronously, nothing waits to be flushed unless a write failed: then nothing can be.
  const flushSync = destination.flushSync.bind(destination);
  destination.flushSync = () => {
    if (!unwritable) flushSync();
  };
  return destination;
}

/** Readable lines name neither the process (pid, host) nor the logger; errors show their stack. */
function readable(line: string, color: boolean): string {
  try {
    return formatRecord(JSON.parse(line) as LogRecord, { color, stacks: true, hide: ['name'] });
  } catch {
    return line.trimEnd();
  }
}
