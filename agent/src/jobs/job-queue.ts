import PQueue from 'p-queue';

export interface QueuedJob {
  jobId: string;
  workflowName: string;
}

export interface RunningJob extends QueuedJob {
  startedAt: string;
}

/**
 * The agent's job queue: jobs run one at a time (p-queue, concurrency 1); `capacity` is the
 * number of jobs it holds, the running one included (docs/agent-protocol.md: "The queue holds 4 jobs by
 * default and runs them one at a time": one running and three waiting). A job that finds the
 * queue full is refused by the caller.
 */
export class JobQueue {
  readonly #queue = new PQueue({ concurrency: 1 });
  readonly #waiting = new Map<string, QueuedJob>();
  #running: RunningJob | null = null;
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
    return [...this.#waiting.values()];
  }

  has(jobId: string): boolean {
    return this.#waiting.has(jobId) || this.#running?.jobId === jobId;
  }

  /** Queues a job; `run` is called when its turn comes (never for a job taken back by `takeWaiting`). */
  add(job: QueuedJob, run: () => Promise<void>): void {
    this.#waiting.set(job.jobId, job);
    this.#onChange();
    void this.#queue.add(async () => {
      if (!this.#waiting.delete(job.jobId)) return; // taken back while it waited
      this.#running = { ...job, startedAt: new Date().toISOString() };
      this.#onChange();
      try {
        await run();
      } finally {
        this.#running = null;
        this.#onChange();
      }
    });
  }

  /** Takes every waiting job out of the queue (shutdown): they will not run. */
  takeWaiting(): QueuedJob[] {
    const jobs = this.waiting;
    this.#waiting.clear();
    this.#queue.clear();
    if (jobs.length) this.#onChange();
    return jobs;
  }

  /** Resolves when nothing runs and nothing waits. */
  onIdle(): Promise<void> {
    return this.#queue.onIdle();
  }
}
