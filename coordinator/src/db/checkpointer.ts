import fs from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Db } from './database.js';
import type { HoldWrites } from './writer/executor.js';

/** SQLite's own threshold (pages), restored when the checkpoint thread is gone. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;
const STOP_TIMEOUT_MS = 10_000;
/**
 * A look that finds a WAL file of this many frames moves the checkpoints to the thread: copying
 * them on the request thread would stop it for ~3 ms or more (~3 µs a frame on the reference
 * machine, docs/performance.md, "Coordinator memory"): 4,000 frames a second at the 250 ms looks.
 */
export const THREAD_FRAMES = 1000;
/**
 * SLOW_LOOKS checkpoints of the request thread in a row that each take longer than this (ms) move
 * the checkpoints to the thread too: the disk's syncs are slow (network storage, a spinning
 * disk), and every look would hold the request thread up that long. (In a row, so that one look
 * slowed by a busy CPU does not.)
 */
export const SLOW_LOOK_MS = 5;
const SLOW_LOOKS = 3;
/**
 * A WAL of this many frames (64 MiB of 4 KiB pages) that the thread has copied all but the last
 * of is copied to its end on the request thread, so that it restarts (see `finishCopy`).
 */
export const RESTART_FRAMES = 16_384;
/**
 * The longest the writes are held for the thread's copy to the WAL's end (its syncs took 30-90 ms
 * under a retention sweep's writes); past it they go on, and the next copy to the end runs here.
 */
const THREAD_COPY_MAX_MS = 1_000;

export interface CheckpointerOptions {
  /** How often the WAL is looked at and checkpointed. */
  intervalMs: number;
  logger: Logger;
  /** Frames in the WAL at one look that start the thread (THREAD_FRAMES). */
  threadFrames?: number;
  /** SLOW_LOOKS checkpoints in a row on the request thread that take longer (ms) start the thread (SLOW_LOOK_MS). */
  slowLookMs?: number;
  /** A WAL this long, copied by the thread all but its last frames, is copied to its end (RESTART_FRAMES). */
  restartFrames?: number;
  /**
   * Holds the request connection's hot writes (the group commit) while the thread copies a WAL to
   * its end (`finishCopy`); without it, that copy runs on the request thread.
   */
  holdWrites?: HoldWrites;
}

export interface Checkpointer {
  /** Where the checkpoints run now: the request thread (light writes), their own thread, or SQLite on commit (the thread failed). */
  readonly runsOn: 'request-thread' | 'own-thread' | 'commit';
  /** Stops the checks (and the thread, closing its connection); the database's own `close` checkpoints last. */
  stop(): Promise<void>;
  /**
   * Resolves once the WAL holds fewer than `frames` frames or has been copied whole into the
   * database file (it then restarts at the next write), as the last checkpoint found it
   * (before the thread's first, it waits for it); or once `maxWaitMs` passed. For a long run of writes (the
   * retention sweep) to let the checkpoint catch up: a PASSIVE checkpoint restarts the WAL only
   * once it has copied every frame, which a writer that never pauses keeps it from doing, and the
   * file then grows by every page written. When the thread's checkpoints have caught up with a
   * WAL of `frames` or more, the request thread copies what was written since itself.
   */
  walBelow(frames: number, maxWaitMs: number): Promise<void>;
  /** How many copies of a WAL to its end ran on the thread (writes held) and on the request thread (`finishCopy`). */
  readonly finishedCopies: { thread: number; requestThread: number };
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
  if (message === 'finish') return parentPort.postMessage({ finished: checkpoint.get() });
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * Checkpoints the WAL of `db` so that the request thread never stops long for it. With SQLite's
 * automatic checkpoints, the commit that crosses 1,000 WAL pages copies them into the database
 * file and waits for two fsyncs on the request thread: at a steady write load that stalled the
 * event loop several times a second (~7% of the time in docs/performance.md, "Async trigger
 * run", and the p99 of every request behind it). So the request connection never checkpoints on
 * commit (`wal_autocheckpoint = 0`), and every `intervalMs`:
 *
 * - while the writes are light, the request thread itself runs a PASSIVE checkpoint when
 *   something was written since the last look (`total_changes()`): a few frames, ~0.3 ms;
 * - the first look that finds a WAL file of `threadFrames` frames or more (a burst: nothing is
 *   copied on the request thread), or the third look in a row whose checkpoint took longer than
 *   `slowLookMs` (a disk with slow syncs), moves the checkpoints for good to a worker thread with its own connection, which never blocks the request thread. A thread is a
 *   second V8 heap (~11 MB, not given back when it ends): an idle or lightly written coordinator
 *   does without.
 * - once the thread checkpoints, a look finishes the copy of a WAL of `restartFrames` or more the
 *   thread has all but copied, so that it restarts under steady writes too (`finishCopy`): on the
 *   thread while the group commit is held, so that its syncs never hold the event loop.
 *
 * Should the thread fail, SQLite's automatic checkpoints are restored, so the WAL never grows
 * without bound. An in-memory database has no WAL: nothing is started.
 */
export function startCheckpointer(
  db: Db,
  {
    intervalMs,
    logger,
    threadFrames = THREAD_FRAMES,
    slowLookMs = SLOW_LOOK_MS,
    restartFrames = RESTART_FRAMES,
    holdWrites,
  }: CheckpointerOptions,
): Checkpointer {
  const finishedCopies = { thread: 0, requestThread: 0 };
  if (db.memory) return { runsOn: 'commit', stop: async () => {}, walBelow: async () => {}, finishedCopies };
  db.pragma('wal_autocheckpoint = 0');
  const totalChanges = db.prepare('SELECT total_changes() AS n').pluck();
  const checkpointHere = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  let runsOn: Checkpointer['runsOn'] = 'request-thread';
  let stopping = false;
  /** The last checkpoint: the WAL's frames (-1: none yet), and those not yet copied. */
  let walFrames = -1;
  let uncopied = 0;
  const found = (result: CheckpointResult) => {
    walFrames = result.log;
    uncopied = result.log - result.checkpointed;
  };
  let thread: { worker: Worker; exited: Promise<void> } | null = null;

  const fallBack = (what: string, error?: unknown) => {
    endThreadCopy(null);
    if (stopping) return;
    stopping = true;
    runsOn = 'commit';
    clearInterval(timer);
    logger.error({ err: error }, `WAL ${what}; SQLite checkpoints on commit again`);
    if (db.open) db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
  };

  const startThread = (why: Record<string, number>) => {
    let worker: Worker;
    try {
      worker = new Worker(THREAD_SOURCE, {
        eval: true,
        workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), file: db.name, intervalMs },
        resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
      });
    } catch (error) {
      fallBack('checkpoint thread failed to start', error);
      return;
    }
    runsOn = 'own-thread';
    walFrames = -1; // the thread's first checkpoint tells
    logger.info(why, 'WAL checkpoints move to a thread of their own (heavy writes)');
    worker.on('error', (error) => fallBack('checkpoint thread failed', error));
    worker.on('message', (message: CheckpointResult | { finished: CheckpointResult }) => {
      if ('finished' in message) return endThreadCopy(message.finished);
      found(message);
      threadReported = true;
      finishedHere = false;
    });
    const exited = new Promise<void>((resolve) =>
      worker.on('exit', (code) => {
        fallBack(`checkpoint thread exited with code ${code}`);
        resolve();
      }),
    );
    // The thread alone never keeps the process alive.
    worker.unref();
    thread = { worker, exited };
  };

  let changes = -1;
  let slowLooks = 0;
  // A WAL file this large has held `threadFrames` frames (a frame: a 24-byte header and a page,
  // after the file's 32-byte header). It keeps its size when the WAL restarts, so it tells the
  // most the WAL ever held, without copying anything on the request thread.
  const frameBytes = 24 + (db.pragma('page_size', { simple: true }) as number);
  const heavyWalBytes = 32 + threadFrames * frameBytes;
  const walFile = `${db.name}-wal`;
  const walBytes = () => fs.statSync(walFile, { throwIfNoEntry: false })?.size ?? 0;
  /** Whether the figures of the WAL are the thread's last (a checkpoint here since made them its own). */
  let threadReported = false;
  /** Whether the last copy to the WAL's end (`finishCopy`) copied it whole (since the thread's last figures). */
  let finishedHere = false;
  /** The thread's copy to the WAL's end under way: the release of the writes it holds, and its time limit. */
  let threadCopy: {
    release: () => void;
    timeout: NodeJS.Timeout;
    changes: number;
    /** Settles when the copy ended (`walBelow` waits for it: a run of writes holds too). */
    ended: Promise<void>;
    end: () => void;
  } | null = null;
  /** The thread's last copy to the end found a write of its own time (one the hold does not cover): the next runs here. */
  let threadCopyMissed = false;
  /** Ends the thread's copy to the WAL's end with its result (null: none came), releasing the writes. */
  function endThreadCopy(result: CheckpointResult | null): void {
    if (!threadCopy) return;
    const { timeout, release, changes: before, end } = threadCopy;
    clearTimeout(timeout);
    threadCopy = null;
    end();
    // A write the hold does not cover (not a hot one) went in meanwhile: the thread's figures are
    // of the WAL it began with, and a copy "whole" to them is not whole to the WAL now.
    const written = db.open && totalChanges.get() !== before;
    release();
    finishedHere = result !== null && !written && result.log >= 0 && result.log === result.checkpointed;
    threadCopyMissed = !finishedHere;
    if (result && result.log >= 0) found(result);
    if (finishedHere) finishedCopies.thread++;
  }
  /**
   * The thread's checkpoints never copy the WAL whole while the request thread writes during them
   * (each copies the frames there were when it began, then syncs), so under steady writes the WAL
   * would not restart and would grow by every page written: 1.1 GiB in a 50,000-job retention
   * sweep, cut back at last by the commit that restarted it, which held the request thread up to
   * 0.45 s (on ext4, waiting for the file system's journal). Once the thread has copied all but
   * the last frames of a WAL of `frames` or more, the rest is copied where nothing is written
   * meanwhile, and the next write restarts the WAL: on the thread, with the group commit held
   * (`holdWrites`: the event loop goes on; this returns false, and the thread's answer sets
   * `finishedHere`), or, without a hold or after a write it did not cover, by a checkpoint here
   * (its syncs hold the request thread 5-90 ms, once per `frames` written). Not while the thread is
   * behind: copying thousands of frames here would hold the request thread, and on the thread the
   * writes. Whether it copied the WAL to its end, here.
   */
  const finishCopy = (frames: number): boolean => {
    if (runsOn !== 'own-thread' || !threadReported || walFrames < frames || uncopied >= threadFrames) return false;
    if (stopping || !db.open || threadCopy) return false;
    threadReported = false;
    if (holdWrites && thread && !threadCopyMissed) {
      // The copy to the end, and its syncs, on the thread while the writes wait: the event loop
      // goes on (the request thread's copy held it 30-90 ms, its database fsync after SQLite's
      // ftruncate waiting for ext4's journal). It answers at once: nothing else runs on it.
      const { promise: ended, resolve: end } = Promise.withResolvers<void>();
      threadCopy = {
        release: holdWrites(),
        timeout: setTimeout(() => endThreadCopy(null), THREAD_COPY_MAX_MS),
        changes: totalChanges.get() as number,
        ended,
        end,
      };
      thread.worker.postMessage('finish');
      return false;
    }
    threadCopyMissed = false;
    try {
      const result = checkpointHere.get() as CheckpointResult;
      // -1: a checkpoint of the thread's was running; tried again after its next one.
      if (result.log < 0) return false;
      found(result);
      finishedHere = result.log === result.checkpointed;
      if (finishedHere) finishedCopies.requestThread++;
      return finishedHere;
    } catch (error) {
      // The thread's checkpoints go on; the WAL restarts once one of them copies it whole.
      logger.warn({ err: error }, 'WAL checkpoint on the request thread failed');
      return false;
    }
  };
  /**
   * One look on the request thread: a checkpoint when something was written or left uncopied
   * since the last; once the thread checkpoints, the end of a long WAL (`finishCopy`).
   */
  const look = () => {
    if (runsOn === 'own-thread') finishCopy(restartFrames);
    if (runsOn !== 'request-thread' || stopping || !db.open) return;
    try {
      const now = totalChanges.get() as number;
      // Nothing written since a look that copied everything: nothing to do.
      if (now === changes && uncopied === 0) return;
      changes = now;
      // A burst too large to copy here (~3 µs a frame) goes to the thread straight away.
      const bytes = walBytes();
      if (bytes >= heavyWalBytes) {
        startThread({ walFrames: Math.floor((bytes - 32) / frameBytes) });
        return;
      }
      const started = performance.now();
      found(checkpointHere.get() as CheckpointResult);
      // A disk whose syncs hold the request thread up (network storage, a spinning disk) too.
      const tookMs = performance.now() - started;
      slowLooks = tookMs > slowLookMs ? slowLooks + 1 : 0;
      if (slowLooks >= SLOW_LOOKS) startThread({ checkpointMs: Math.round(tookMs * 10) / 10 });
    } catch (error) {
      fallBack('checkpoint on the request thread failed', error);
    }
  };
  const timer = setInterval(look, intervalMs);
  timer.unref();

  /** A WAL copied whole restarts at the next write: only one not copied yet is a reason to wait. */
  const waiting = (frames: number) => walFrames < 0 || (walFrames >= frames && uncopied > 0);
  return {
    get runsOn() {
      return runsOn;
    },
    finishedCopies,
    async walBelow(frames, maxWaitMs) {
      look();
      const until = Date.now() + maxWaitMs;
      while (runsOn !== 'commit' && Date.now() < until) {
        // A copy of the thread's to the WAL's end holds the writes: this run of writes waits too.
        if (threadCopy) {
          await threadCopy.ended;
          continue;
        }
        // Copied whole as the thread last saw it: copied to its end here, it restarts at the next write.
        if (!waiting(frames) && (runsOn !== 'own-thread' || walFrames < frames || finishedHere || finishCopy(frames))) {
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
        look();
      }
    },
    async stop() {
      clearInterval(timer);
      endThreadCopy(null);
      if (!thread) {
        stopping = true;
        return;
      }
      if (!stopping) {
        stopping = true;
        thread.worker.postMessage('stop');
      }
      // A checkpoint in progress finishes first; a thread that does not answer is ended.
      const { worker, exited } = thread;
      const kill = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(kill);
    },
  };
}
