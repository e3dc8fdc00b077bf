import { EventEmitter } from 'node:events';
import type { ClusterEvent, ClusterRelay } from '../model/cluster-relay.js';
import type { Job } from '../model/jobs.js';

/**
 * Which job ends a listener hears: `here`, those this coordinator committed (work to do once per
 * end: metrics, an update job's settling, chat notices); `anywhere`, those of every coordinator
 * on the database too (what this process holds for the job: an agent's queue slot, a sync wait).
 */
export type EventScope = 'here' | 'anywhere';

/**
 * The job notifications of a coordinator, each sent after its commit: "a job was created for
 * agent A" (the stream pushes it if A is connected here), "a user cancelled job J of agent A" (the
 * stream tells A), "job J started" (its figures, docs/metrics.md) and "job J reached a terminal
 * status" (a sync trigger run waiting on J answers). Sync waits listen here instead of polling the
 * database.
 *





 */
export class JobEvents {
  private readonly emitter = new EventEmitter();

  constructor(private readonly relay: ClusterRelay | null = null) {
    this.emitter.setMaxListeners(0);
    relay?.subscribe({ event: (event) => this.fromElsewhere(event), gap: () => this.emitter.emit('gap') });
  }

  jobCreated(agentId: string, jobId: string): void {
    this.emitter.emit('created', agentId, jobId);
    this.relay?.publish({ type: 'job_created', agentId, jobId });
  }

  /**
   * A pending job its agent was sent is to go to it again, even if its stream sent it already: the
   * agent dropped it (an update job whose device reported without it, ota/engine.ts). A job is
   * otherwise never sent twice to one stream: a late `created` event would send a copy the agent
   * may get after the job ended.
   */
  jobResent(agentId: string, jobId: string): void {
    this.emitter.emit('resent', agentId, jobId);
    this.relay?.publish({ type: 'job_resent', agentId, jobId });
  }

  /** Jobs to send again, on any coordinator of the database. */
  onJobResent(listener: (agentId: string, jobId: string) => void): () => void {
    this.emitter.on('resent', listener);
    return () => this.emitter.off('resent', listener);
  }

  /** Jobs created on any coordinator of the database. */
  onJobCreated(listener: (agentId: string, jobId: string) => void): () => void {
    this.emitter.on('created', listener);
    return () => this.emitter.off('created', listener);
  }

  /**
   * A job of the organization waits in a pool: no agent of it had room when it was admitted
   * (docs/fleets.md, "Pools"). Streams of its agents that have room since take it.
   */
  jobPooled(orgId: string, jobId: string): void {
    this.emitter.emit('pooled', orgId, jobId);
    this.relay?.publish({ type: 'job_pooled', orgId, jobId });
  }

  /** Jobs put in a pool on any coordinator of the database. */
  onJobPooled(listener: (orgId: string, jobId: string) => void): () => void {
    this.emitter.on('pooled', listener);
    return () => this.emitter.off('pooled', listener);
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
    this.relay?.publish({ type: 'cancel_requested', agentId, jobId });
  }

  /** Cancels committed on any coordinator of the database. */
  onCancelRequested(listener: (agentId: string, jobId: string) => void): () => void {
    this.emitter.on('cancel', listener);
    return () => this.emitter.off('cancel', listener);
  }

  jobFinished(jobId: string): void {
    this.emitter.emit(`finished:${jobId}`);
    this.emitter.emit('finished', jobId);
    this.emitter.emit('finished-anywhere', jobId);
    this.relay?.publish({ type: 'job_finished', jobId });
  }

  /**
   * Every job that reaches a terminal status (after its commit), on this coordinator (`here`, the
   * default) or on any coordinator of the database (`anywhere`); returns the unsubscribe function.
   */
  onJobFinished(listener: (jobId: string) => void, scope: EventScope = 'here'): () => void {
    const name = scope === 'here' ? 'finished' : 'finished-anywhere';
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }

  /**
   * Events of other coordinators may have been lost (the relay's connection came back after a
   * drop): whoever holds something they would have changed reads the database again.
   */
  onGap(listener: () => void): () => void {
    this.emitter.on('gap', listener);
    return () => this.emitter.off('gap', listener);
  }

  /**
   * Resolves true when the job may have reached a terminal status (it did, or events of other
   * coordinators may have been missed), false after `timeoutMs`. The caller must read the job's
   * status after subscribing (it may have finished before the wait began), and again after true.
   */
  waitForFinish(jobId: string, timeoutMs: number, signal?: AbortSignal): { done: Promise<boolean>; cancel(): void } {
    // Aborted already (the client went away, the server closes, while the job was admitted): an
    // abort listener added now would never fire, and only the timer would end the wait.
    if (signal?.aborted) return { done: Promise.resolve(false), cancel: () => {} };
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
        this.emitter.off('gap', onFinish);
        signal?.removeEventListener('abort', onAbort);
      };
      cancel = () => {
        cleanup();
        resolve(false);
      };
      this.emitter.once(event, onFinish);
      this.emitter.once('gap', onFinish);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    return { done, cancel };
  }

  /** An event another coordinator committed: told to the listeners that hear other coordinators. */
  private fromElsewhere(event: ClusterEvent): void {
    switch (event.type) {
      case 'job_created':
        this.emitter.emit('created', event.agentId, event.jobId);
        break;
      case 'job_resent':
        this.emitter.emit('resent', event.agentId, event.jobId);
        break;
      case 'job_pooled':
        this.emitter.emit('pooled', event.orgId, event.jobId);
        break;
      case 'cancel_requested':
        this.emitter.emit('cancel', event.agentId, event.jobId);
        break;
      case 'job_finished':
        this.emitter.emit(`finished:${event.jobId}`);
        this.emitter.emit('finished-anywhere', event.jobId);
        break;
      default:
        break;
    }
  }
}
