import { showControls } from '@drover/shared';
import type { Runtime } from '../runtime.js';

/**
 * The runtime every command prints through: `out` and `err` show the control characters of what
 * they print as `\xHH` (an escape sequence in a job's log, an error message or a name cannot set
 * the clipboard, rewrite lines or retitle the terminal), keeping tabs and line breaks; `raw`
 * writes the command line's own sequences (progress.ts, `jobs --watch`). JSON output has no raw
 * control character to show (json.ts), so it stays exact JSON.
 */
export function showingControls(rt: Runtime): Runtime {
  if (rt.raw) return rt; // already this
  return {
    ...rt,
    out: (text) => rt.out(showControls(text)),
    err: (text) => rt.err(showControls(text)),
    raw: { out: rt.out, err: rt.err },
  };
}

/** Where the command line's own terminal sequences go: as they are. */
export const rawOutput = (rt: Runtime): { out(text: string): void; err(text: string): void } => rt.raw ?? rt;
