/** The agent's own log (docs/agent-protocol.md): rotating pino JSON lines, and reading them back for people. */
export {
  createAgentLogger,
  DEFAULT_LOG_MAX_BYTES,
  DEFAULT_LOG_MAX_FILES,
  type AgentLoggerOptions,
} from './create-logger.js';
export { RotatingFile, type RotatingFileOptions } from './rotating-file.js';
export { redactFields, REDACTED } from './redact.js';
export { logDir, logFile, logFilesInOrder, LOG_FILE } from './log-files.js';
export {
  formatRecord,
  levelNumber,
  levelLabel,
  recordLevel,
  shortId,
  LEVELS,
  LEVEL_NAMES,
  type LogRecord,
  type FormatOptions,
} from '@drover/shared';
export { readLogs, followLogs, type LogFilter, type LogLine } from './read-logs.js';
