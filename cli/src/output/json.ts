import type { Runtime } from '../runtime.js';

/** Prints an API answer as it came, indented, for scripts (`--json`). */
export function printJson(rt: Runtime, value: unknown): void {
  rt.out(`${JSON.stringify(value, null, 2)}\n`);
}
