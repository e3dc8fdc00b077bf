import fs from 'node:fs';
import path from 'node:path';

/** The agent's log directory and current log file under the state directory. */
export const LOG_DIR = 'logs';
export const LOG_FILE = 'agent.log';

export const logDir = (stateDir: string): string => path.join(stateDir, LOG_DIR);
export const logFile = (stateDir: string): string => path.join(stateDir, LOG_DIR, LOG_FILE);

/** `agent.log.<n>`: the n-th most recent rotated file (1 is the newest). */
export const rotatedFile = (file: string, n: number): string => `${file}.${n}`;

/**
 * The log files of `dir`, oldest first: `agent.log.4`, ..., `agent.log.1`, then `agent.log`
 * (whichever exist; the current file last even when it does not exist yet).
 */
export function logFilesInOrder(stateDir: string): string[] {
  const dir = logDir(stateDir);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    names = [];
  }
  const rotated = names
    .map((name) => /^agent\.log\.(\d+)$/.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => b - a)
    .map((n) => rotatedFile(path.join(dir, LOG_FILE), n));
  return [...rotated, path.join(dir, LOG_FILE)];
}
