import { EventEmitter } from 'node:events';
import type { Job } from './model/jobs.js';

/**
 * In-process job notifications of one coordinator: "a job was created for agent A" (the stream
 * pushes it if A is connected here), "a user cancelled job J of agent A" (the stream tells A),
 * "job J started" (its figures, docs/metrics.md) and "job J reached a terminal status" (a sync
 * trigger run waiting on J answers). Sync waits listen here instead of polling the database.
 *
 * Scale-out note: with several coordinators these events must also travel between instances
 * (PostgreSQL LISTEN/NOTIFY); every emitter goes through this class so that is one change.
 */
export class JobEvents {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  jobCreated(agentId: string, jobId: string): void {
    this.emitter.emit('created', agentId, jobId);
  }

  onJobCreated(listener: (agentId: string, jobId: string) => void): () => void {
    this.emitter.on('created', listener);
    return () => this.emitter.off('created', listener);
  }

  /** The job started running (after its commit): `job` as it is now. */
  jobStarted(job: Job): void {
    this.emitter.emit('started', job);
  }

  onJobStarted(listener: (job: Job) => void): () => void {
    this.emitter.on('started', listener);
    return () => this.emitter.off('started', listener);
  }

  /** A cancel was committed for a job of the agent (docs/jobs.md, "Cancellation"). */
  cancelRequested(agentId: string, jobId: string): void {
    this.emitter.emit('cancel', agentId, jobId);
  }

  onCancelRequested(listener: (agentId: string, jobId: string) => void): () => void {
    this.emitter.on('cancel', listener);
    return () => this.emitter.off('cancel', listener);
  }

  jobFinished(jobId: string): void {
    this.emitter.emit(`finished:${jobId}`);
    this.emitter.emit('finished', jobId);
  }

  /** Every job that reaches a terminal status (after its commit); returns the unsubscribe function. */
  onJobFinished(listener: (jobId: string) => void): () => void {
    this.emitter.on('finished', listener);
    return () => this.emitter.off('finished', listener);
  }

  /**
   * Resolves true when the job reaches a terminal status, false after `timeoutMs`. The caller
   * must read the job's status after subscribing (it may have finished before the wait began).
   */
  waitForFinish(jobId: string, timeoutMs: number, signal?: AbortSignal): { done: Promise<boolean>; cancel(): void } {
    const event = `finished:${jobId}`;
    let cancel = () => {};
    const done = new Promise<boolean>((resolve) => {
      const onFinish = () => {
        cleanup();
        resolve(true);
      };
      const timer = setTimeout(() => {
        cleanup();
        resolve(false);
      }, timeoutMs);
      const onAbort = () => {
        cleanup();
        resolve(false);
      };
      const cleanup = () => {
        clearTimeout(timer);
        this.emitter.off(event, onFinish);
        signal?.removeEventListener('abort', onAbort);
      };
      cancel = () => {
        cleanup();
        resolve(false);
      };
      this.emitter.once(event, onFinish);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    return { done, cancel };
  }
}
