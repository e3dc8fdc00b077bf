import { FailureLog, type FailureLogger } from '../../util/failure-log.js';
import type { FileService } from './file-service.js';

/** Temp files of uploads older than this, not being written by this process, are removed. */
export const STALE_TEMP_MS = 3600_000;
const BATCH = 100;

export interface FileSweeperOptions {
  files: Pick<FileService, 'sweepDue' | 'local'>;
  /** DROVER_FILE_SWEEP_INTERVAL_MS */
  intervalMs: number;
  logger: FailureLogger;
}

/**
 * Every DROVER_FILE_SWEEP_INTERVAL_MS: deletes expired `ttl` files, abandoned uploads (still
 * `pending` a day after their upload URL expired) and failed deletions whose retry is due (see
 * domain/files/deletion.ts), in batches until none is left; then removes stale upload temp files.
 * Files referenced by a release that is not yanked are never swept.
 */
export class FileSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private readonly failures: FailureLog;

  constructor(private readonly options: FileSweeperOptions) {
    this.failures = new FailureLog(options.logger, 'file sweep failed');
  }

  start(): void {
    const tick = () => {
      this.running = this.sweep().finally(() => {
        if (this.stopped) return;
        this.timer = setTimeout(tick, this.options.intervalMs);
        this.timer.unref();
      });
    };
    this.timer = setTimeout(tick, this.options.intervalMs);
    this.timer.unref();
  }

  /** One pass; returns how many files it handled. Never throws (failures are logged). */
  async sweep(): Promise<number> {
    let handled = 0;
    try {
      for (;;) {
        if (this.stopped) break;
        const n = await this.options.files.sweepDue(BATCH);
        handled += n;
        if (n < BATCH) break;
      }
      if (handled > 0) this.options.logger.info({ files: handled }, 'file sweep handled expired or failed deletions');
      await this.options.files.local.removeTemps(STALE_TEMP_MS);
      this.failures.succeeded();
    } catch (error) {
      this.failures.failed(error);
    }
    return handled;
  }

  /** Stops the timer and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running.catch(() => undefined);
  }
}

/** Starts a sweeper; the coordinator stops it on close. */
export function startFileSweeper(o: FileSweeperOptions): FileSweeper {
  const sweeper = new FileSweeper(o);
  sweeper.start();
  return sweeper;
}
