import { formatBytes } from '@drover/agent/client';
import { showsProgress, type Runtime } from '../runtime.js';
import { rawOutput } from './terminal.js';

/** How often the bar is redrawn at most. */
const REDRAW_MS = 100;
const WIDTH = 24;

export interface Progress {
  /** `bytes` more were moved. */
  advance(bytes: number): void;
  /** The transfer starts again from `bytes` (a retry from the start, or a resume). */
  reset(bytes: number): void;
  /** Clears the bar. */
  done(): void;
}

const silent: Progress = { advance() {}, reset() {}, done() {} };

/**
 * A progress bar on stderr (`label [#####-----] 45% 22.5 MB / 50 MB 80 MB/s`), redrawn in place,
 * only on a terminal and never in a CI log (runtime.ts, `showsProgress`): there it is silent.
 */
export function progressBar(rt: Runtime, label: string, total: number): Progress {
  if (!showsProgress(rt)) return silent;
  let moved = 0;
  let drawnAt = 0;
  let started = Date.now();
  let startedFrom = 0;
  const draw = (force: boolean) => {
    const now = Date.now();
    if (!force && now - drawnAt < REDRAW_MS) return;
    drawnAt = now;
    const share = total > 0 ? Math.min(1, moved / total) : 1;
    const filled = Math.round(share * WIDTH);
    const seconds = (now - started) / 1000;
    const rate = seconds > 0.2 ? ` ${formatBytes(Math.round((moved - startedFrom) / seconds))}/s` : '';
    const bar = `${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}`;
    rawOutput(rt).err(
      `\r\x1b[2K${label} [${bar}] ${Math.floor(share * 100)}% ${formatBytes(moved)} / ${formatBytes(total)}${rate}`,
    );
  };
  return {
    advance(bytes) {
      moved += bytes;
      draw(false);
    },
    reset(bytes) {
      moved = bytes;
      startedFrom = bytes;
      started = Date.now();
      draw(true);
    },
    done() {
      rawOutput(rt).err('\r\x1b[2K');
    },
  };
}
