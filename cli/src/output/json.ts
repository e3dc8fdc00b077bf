import { showControlsInJson } from '@drover/shared';
import type { Runtime } from '../runtime.js';

/**
 * Prints an API answer as it came, indented, for scripts (`--json`): the same JSON, with the
 * control characters JSON.stringify leaves raw (DEL, C1) as `\u` escapes, so that nothing in it
 * reaches the terminal as a control (terminal.ts).
 */
export function printJson(rt: Runtime, value: unknown): void {
  rt.out(`${showControlsInJson(JSON.stringify(value, null, 2))}\n`);
}

/** One value as one JSON line (`jobs --watch --json`), escaped as `printJson` escapes it. */
export function jsonLine(value: unknown): string {
  return `${showControlsInJson(JSON.stringify(value))}\n`;
}
