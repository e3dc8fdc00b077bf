import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Db } from './database.js';

/** SQLite's own threshold (pages), restored when the checkpoint thread is gone. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;
const STOP_TIMEOUT_MS = 10_000;

export interface CheckpointerOptions {
  /** How often the thread checkpoints the WAL. */
  intervalMs: number;
  logger: Logger;
}

export interface Checkpointer {
  /** Stops the thread and closes its connection (the database's own `close` checkpoints last). */
  stop(): Promise<void>;
  /**
   * Resolves once the WAL holds fewer than `frames` frames or has been copied whole into the
   * database file (it then restarts at the next write), as the thread's last checkpoint found it
   * (before its first, it waits for it); or once `maxWaitMs` passed; at once without a thread. For a long run of writes (the
   * retention sweep) to let the checkpoint catch up: a PASSIVE checkpoint restarts the WAL only
   * once it has copied every frame, which a writer that never pauses keeps it from doing, and the
   * file then grows by every page written.
   */
  walBelow(frames: number, maxWaitMs: number): Promise<void>;
}

/** What `PRAGMA wal_checkpoint` answers: frames in the WAL, and how many of them are in the database file. */
interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * The thread's code (CommonJS, run with `eval` so that it is the same under tsc's output, tsx and
 * vitest): its own connection to the database file, a PASSIVE checkpoint every `intervalMs`, and
 * a clean close on 'stop'. PASSIVE never waits for, nor blocks, the request thread's readers and
 * writer.
 */
const THREAD_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const timer = setInterval(() => parentPort.postMessage(checkpoint.get()), workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * Moves the WAL checkpoints of `db` to a thread of their own. With SQLite's automatic
 * checkpoints, the commit that crosses 1,000 WAL pages copies them into the database file and
 * waits for two fsyncs on the request thread: at a steady write load that stalled the event loop
 * several times a second (~7% of the time in docs/performance.md, "Async trigger run", and the
 * p99 of every request behind it). Here the request thread's connection never checkpoints and a
 * worker thread with its own connection does, every `intervalMs`, without blocking it.
 *
 * Should the thread fail, SQLite's automatic checkpoints are restored, so the WAL never grows
 * without bound. An in-memory database has no WAL: nothing is started.
 */
export function startCheckpointer(db: Db, { intervalMs, logger }: CheckpointerOptions): Checkpointer {
  if (db.memory) return { stop: async () => {}, walBelow: async () => {} };
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  db.pragma('wal_autocheckpoint = 0');
  const worker = new Worker(THREAD_SOURCE, {
    eval: true,
    workerData: { driver, file: db.name, intervalMs },
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
  });
  let stopping = false;
  const fallBack = (reason: string, error?: unknown) => {
    if (stopping) return;
    stopping = true;
    logger.error({ err: error }, `WAL checkpoint thread ${reason}; SQLite checkpoints on commit again`);
    if (db.open) db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
  };
  worker.on('error', (error) => fallBack('failed', error));
  /** The thread's last checkpoint: the WAL's frames (-1: none yet), and those not yet copied. */
  let walFrames = -1;
  let uncopied = 0;
  worker.on('message', (result: CheckpointResult) => {
    walFrames = result.log;
    uncopied = result.log - result.checkpointed;
  });
  /** A WAL copied whole restarts at the next write: only one not copied yet is a reason to wait. */
  const waiting = (frames: number) => walFrames < 0 || (walFrames >= frames && uncopied > 0);
  const exited = new Promise<void>((resolve) =>
    worker.on('exit', (code) => {
      fallBack(`exited with code ${code}`);
      resolve();
    }),
  );
  // The thread alone never keeps the process alive.
  worker.unref();
  return {
    async walBelow(frames, maxWaitMs) {
      const until = Date.now() + maxWaitMs;
      while (!stopping && waiting(frames) && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
      }
    },
    async stop() {
      if (!stopping) {
        stopping = true;
        worker.postMessage('stop');
      }
      // A checkpoint in progress finishes first; a thread that does not answer is ended.
      const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
