import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Coordinator } from '@drover/coordinator';

/**
 * Plumbing of the latency benchmarks (one call at a time, not a load): a wall clock with
 * sub-millisecond resolution comparable with other processes' clocks, a keep-alive JSON POST
 * client, in-process probes of the coordinator's job events, and percentiles.
 */

/**
 * Wall-clock time in ms with µs resolution: `Date.now()` has whole milliseconds only, and
 * `performance.timeOrigin + performance.now()` drifts from the system clock when NTP slews it.
 * `anchor()` waits (spinning, < 1 ms) for `Date.now()` to tick and pairs that instant with the
 * monotonic clock; `now()` is the anchor's wall time plus the monotonic time since. Re-anchored
 * before every sample, the error stays within a few µs of CLOCK_REALTIME, which is the clock
 * another process on this machine reads (`date +%s%N`).
 */
export class WallClock {
  private wallMs = 0;
  private perfMs = 0;

  constructor() {
    this.anchor();
  }

  anchor(): void {
    const first = Date.now();
    let wall = first;
    while (wall === first) wall = Date.now();
    this.perfMs = performance.now();
    this.wallMs = wall;
  }

  now(): number {
    return this.wallMs + (performance.now() - this.perfMs);
  }
}

export interface JsonResponse {
  status: number;
  body: any;
  text: string;
}

/** A JSON POST client over one keep-alive connection (the cheapest client node:http offers). */
export class JsonClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  private readonly url: URL;

  constructor(baseUrl: string) {
    this.url = new URL(baseUrl);
  }

  post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
    const payload = Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const request = http.request(
        {
          host: this.url.hostname,
          port: this.url.port,
          path,
          method: 'POST',
          agent: this.agent,
          headers: { 'content-type': 'application/json', 'content-length': payload.length, ...headers },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = null;
            try {
              parsed = JSON.parse(text);
            } catch {
              // not JSON: the caller reports `text`
            }
            resolve({ status: response.statusCode ?? 0, body: parsed, text });
          });
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * When (wall clock) the coordinator of this process did things to a job: emitted `jobCreated`
 * (the admission committed; the stream listener registered before this probe has already written
 * the `job` event), and received the agent's `accept`, `start` and `finish` reports (the moment
 * the route calls the repository, i.e. after the signature check and before the commit), and the
 * first log batch. The
 * repository methods are wrapped in place; `detach()` restores them.
 */
export interface JobMoments {
  created?: number;
  acceptReceived?: number;
  startReceived?: number;
  startCommitted?: number;
  /** The first log batch of the job. */
  logsReceived?: number;
  logsCommitted?: number;
  finishReceived?: number;
  finishCommitted?: number;
}

export function probeJobMoments(coordinator: Coordinator, clock: WallClock) {
  const { repos, jobEvents } = coordinator.ctx;
  const moments = new Map<string, JobMoments>();
  const at = (jobId: string) => {
    let m = moments.get(jobId);
    if (!m) moments.set(jobId, (m = {}));
    return m;
  };
  const offCreated = jobEvents.onJobCreated((_agentId, jobId) => (at(jobId).created = clock.now()));
  const jobs = repos.jobs;
  const original = { accept: jobs.accept, start: jobs.start, appendLogs: jobs.appendLogs, finish: jobs.finish };
  jobs.accept = (agentId, jobId, time) => {
    at(jobId).acceptReceived = clock.now();
    return original.accept.call(jobs, agentId, jobId, time);
  };
  jobs.start = async (agentId, jobId, time) => {
    at(jobId).startReceived = clock.now();
    const result = await original.start.call(jobs, agentId, jobId, time);
    at(jobId).startCommitted = clock.now();
    return result;
  };
  jobs.appendLogs = async (agentId, jobId, lines, cap) => {
    const first = at(jobId).logsReceived === undefined;
    if (first) at(jobId).logsReceived = clock.now();
    const result = await original.appendLogs.call(jobs, agentId, jobId, lines, cap);
    if (first) at(jobId).logsCommitted = clock.now();
    return result;
  };
  jobs.finish = async (agentId, jobId, report, when) => {
    at(jobId).finishReceived = clock.now();
    const result = await original.finish.call(jobs, agentId, jobId, report, when);
    at(jobId).finishCommitted = clock.now();
    return result;
  };
  return {
    moments,
    detach() {
      offCreated();
      Object.assign(jobs, original);
    },
  };
}

/** Resolves with the job once it is terminal (listening, not polling), or throws after `timeoutMs`. */
export async function waitForTerminalJob(coordinator: Coordinator, jobId: string, timeoutMs = 30_000) {
  const { repos, jobEvents } = coordinator.ctx;
  const wait = jobEvents.waitForFinish(jobId, timeoutMs);
  try {
    let job = await repos.jobs.findById(jobId);
    if (job && !TERMINAL.has(job.status)) {
      await wait.done;
      job = await repos.jobs.findById(jobId);
    }
    if (!job || !TERMINAL.has(job.status)) throw new Error(`job ${jobId} did not end in ${timeoutMs} ms`);
    return job;
  } finally {
    wait.cancel();
  }
}

const TERMINAL = new Set(['success', 'failed', 'timed_out', 'cancelled', 'rejected']);

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export interface LatencySummary {
  count: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    count: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
  };
}

/** One line: `label  p50 … p90 … p99 … (min … max … mean …, n)`, in ms. */
export function formatLatency(label: string, s: LatencySummary): string {
  const ms = (v: number) => v.toFixed(2).padStart(7);
  return `${label.padEnd(46)} p50 ${ms(s.p50)} ms  p90 ${ms(s.p90)} ms  p99 ${ms(s.p99)} ms   (min ${s.min.toFixed(2)}, max ${s.max.toFixed(2)}, mean ${s.mean.toFixed(2)}; n=${s.count})`;
}
