import pino, { type Logger } from 'pino';
import type { LogLevel } from './config/config.js';

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
];

/** The coordinator's one logger: pino JSON lines on stdout (or `destination`), credentials redacted. */
export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      name: 'drover-coordinator',
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    destination,
  );
}
