import pino, { type Logger } from 'pino';
import type { LogLevel } from './config/config.js';

/** The coordinator's one logger. Credentials are redacted wherever they could appear. */
export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      name: 'drover-coordinator',
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-signature"]',
          'headers.authorization',
          'password',
          '*.password',
          'token',
          '*.token',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
