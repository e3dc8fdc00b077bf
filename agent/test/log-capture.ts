import pino, { type Logger } from 'pino';

/** A pino logger whose records are kept in memory, for assertions on log lines. */
export function captureLogger(level = 'trace'): { logger: Logger; records: Record<string, any>[] } {
  const records: Record<string, any>[] = [];
  const logger = pino({ level, base: null }, { write: (line: string) => void records.push(JSON.parse(line)) });
  return { logger, records };
}
