import pino, { type Logger } from 'pino';
import { formatRecord, withNewCauses, type LogRecord } from '@drover/shared';
import { describeFileError, makeStateDir } from '../state/files.js';
import { logDir, logFile } from './log-files.js';
import { maskLogLine, type LogSecrets } from './mask-line.js';
import { redactFields } from './redact.js';
import { RotatingFile } from './rotating-file.js';

export interface AgentLoggerOptions {
  stateDir: string;
  /** pino level name: trace, debug, info, warn, error, fatal or silent. */
  level: string;
  /** Also print readable lines on standard output (`run` in a terminal). */
  stdout?: boolean;
  /** Colors on standard output (default: when it is a terminal and NO_COLOR is unset). */
  color?: boolean;
  /** Rotation: size of one file (default 10 MiB) and files kept (default 5). */
  maxBytes?: number;
  maxFiles?: number;
  /** Secret values masked in every line written (the daemon's secrets; absent: none). */
  secrets?: LogSecrets;
}

export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;
export const DEFAULT_LOG_MAX_FILES = 5;

/**
 * The agent's logger: pino JSON lines appended synchronously to `<state-dir>/logs/agent.log`,
 * rotated by size (10 MiB × 5 files by default), and optionally readable lines on standard
 * output. No pino transport (worker threads cannot run inside the single executable). Fields
 * named `secret*` or `token` are replaced by `[redacted]`, and the values of `secrets` by `***`
 * wherever they appear. Log about a job with its `jobId`
 * (and `workflow`) fields, e.g. `logger.child({ jobId, workflow })`.
 *
 * While the file cannot be written (a full disk, a file system remounted read-only), the lines go
 * to standard error instead, readable, after one line there saying why, so that the service's
 * journal (`journalctl -u drover-agent`) has what `drover-agent logs` cannot show; once the file
 * takes lines again, it gets a warning saying how many went to standard error meanwhile.
 */
export function createAgentLogger(options: AgentLoggerOptions): Logger {
  const dir = logDir(options.stateDir);
  makeStateDir(dir, "the agent's log");
  const file = new RotatingFile(logFile(options.stateDir), {
    maxBytes: options.maxBytes ?? DEFAULT_LOG_MAX_BYTES,
    maxFiles: options.maxFiles ?? DEFAULT_LOG_MAX_FILES,
  });
  const color = options.color ?? (process.stdout.isTTY === true && !process.env.NO_COLOR);
  /** Lines that went to standard error because the file could not take them (null: it takes them). */
  let diverted: number | null = null;
  const destination = {
    write(raw: string): void {
      const line = options.secrets ? maskLogLine(raw, options.secrets) : raw;
      if (options.stdout) process.stdout.write(`${readable(line, color)}\n`);
      if (diverted !== null && file.write(noteLine(40, backMessage(file.file, diverted)))) diverted = null;
      if (file.write(line)) return;
      if (diverted === null) {
        diverted = 0;
        const why = describeFileError(file.lastError, dir);
        process.stderr.write(
          `drover-agent: cannot write its log ${file.file}: ${why}; ` + `its lines go to standard error until it can\n`,
        );
      }
      diverted += 1;
      // On a terminal they are on standard output already.
      if (!options.stdout) process.stderr.write(`${readable(line, false)}\n`);
    },
  };
  const logger = pino(
    {
      level: options.level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: withNewCauses(pino.stdSerializers.err) },
      formatters: {
        bindings: (bindings) => redactFields(bindings),
        log: (fields) => redactFields(fields),
      },
    },
    destination,
  );
  // pino applies `formatters.bindings` to the root's bindings only; children inherit this `child`.
  type ChildFn = (this: unknown, bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => unknown;
  const child = logger.child as unknown as ChildFn;
  const redactedChild: ChildFn = function (this: unknown, bindings, childOptions) {
    return child.call(this, redactFields(bindings), childOptions);
  };
  logger.child = redactedChild as unknown as Logger['child'];
  return logger;
}

/** A line of the logger's own, as pino writes them. */
function noteLine(level: number, msg: string): string {
  return `${JSON.stringify({ level, time: new Date().toISOString(), pid: process.pid, msg })}\n`;
}

const backMessage = (file: string, lines: number) =>
  `the agent's log ${file} can be written again; ${lines} line${lines === 1 ? '' : 's'} before this one went to standard error (journalctl -u drover-agent)`;

function readable(line: string, color: boolean): string {
  try {
    return formatRecord(JSON.parse(line) as LogRecord, { color });
  } catch {
    return line.trimEnd();
  }
}
