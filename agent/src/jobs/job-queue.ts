export interface QueuedJob {
  jobId: string;
  workflowName: string;
}

export interface RunningJob extends QueuedJob {
  startedAt: string;
}

/**
 * The agent's job queue: jobs run one at a time, in the order they came; `capacity` is the
 * number of jobs it holds, the running one included (docs/agent-protocol.md: "The queue holds 4
 * jobs by default and runs them one at a time": one running and three waiting). A job that finds
 * the queue full is refused by the caller.
 *
 * The list of waiting jobs is this class's own: status.json shows it, `has` and `isFull` look at
 * it, and a cancel or the shutdown takes waiting jobs back out of it. A promise-queue library cannot be that
 * list (p-queue, which this used at concurrency 1, can tell how many tasks wait but not which,
 * and gives one back only through a per-task abort signal), so it ran beside a map of its own
 * that had to be kept in step with it. What is left is "start the next job when the running one
 * ends", done here in a few lines.
 */
export class JobQueue {
  readonly #waiting = new Map<string, { job: QueuedJob; run: () => Promise<void> }>();
  #running: RunningJob | null = null;
  #idleWaiters: (() => void)[] = [];
  readonly #onChange: () => void;

  constructor(
    readonly capacity: number,
    onChange: () => void = () => {},
  ) {
    this.#onChange = onChange;
  }

  /** True when the queue holds `capacity` jobs, running and waiting. */
  get isFull(): boolean {
    return this.#waiting.size + (this.#running ? 1 : 0) >= this.capacity;
  }

  get running(): RunningJob | null {
    return this.#running;
  }

  get waiting(): QueuedJob[] {
    return [...this.#waiting.values()].map((waiting) => waiting.job);
  }

  has(jobId: string): boolean {
    return this.#waiting.has(jobId) || this.#running?.jobId === jobId;
  }

  /**
   * Queues a job; `run` is called when its turn comes, at once when nothing runs (never for a job
   * taken back by `takeWaiting`).
   */
  add(job: QueuedJob, run: () => Promise<void>): void {
    this.#waiting.set(job.jobId, { job, run });
    this.#onChange();
    if (!this.#running) this.#startNext();
  }

  /** Takes one waiting job out of the queue (a cancel): it will not run. Null when it is not waiting. */
  take(jobId: string): QueuedJob | null {
    const waiting = this.#waiting.get(jobId);
    if (!waiting) return null;
    this.#waiting.delete(jobId);
    this.#onChange();
    return waiting.job;
  }

  /** Takes every waiting job out of the queue (shutdown): they will not run. */
  takeWaiting(): QueuedJob[] {
    const jobs = this.waiting;
    this.#waiting.clear();
    if (jobs.length) this.#onChange();
    return jobs;
  }

  /** Resolves when nothing runs and nothing waits. */
  onIdle(): Promise<void> {
    if (!this.#running && this.#waiting.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #startNext(): void {
    const next = this.#waiting.values().next().value; // the first one in: a Map keeps insertion order
    if (!next) {
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
      return;
    }
    this.#waiting.delete(next.job.jobId);
    this.#running = { ...next.job, startedAt: new Date().toISOString() };
    this.#onChange();
    void this.#run(next.run);
  }

  async #run(run: () => Promise<void>): Promise<void> {
    try {
      await run();
    } finally {
      this.#running = null;
      this.#onChange();
      this.#startNext();
    }
  }
}
