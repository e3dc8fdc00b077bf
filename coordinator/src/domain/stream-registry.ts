import { StreamEvent, type JobAssignment } from '@drover/shared';
import type { AgentRepository } from '../db/repositories/agents.js';
import type { Job } from '../db/repositories/job-rows.js';
import type { JobRepository } from '../db/repositories/jobs.js';
import { isoNow, type Clock } from '../util/clock.js';
import type { AgentEvents } from './agent-events.js';
import type { JobEvents } from './job-events.js';
import { isOpenJobStatus } from './job-state.js';
import { sseEvent, toAssignment } from './sse.js';

/** Where a stream's bytes go: the hijacked HTTP response, or a fake in tests. */
export interface StreamSink {
  /** Writes a chunk; false when the connection is gone (or was cut for being too far behind). */
  write(chunk: string): boolean;
  /** Ends the response (the agent sees the stream end and reconnects). */
  end(): void;
  /** Called once when the connection closes, whoever closed it. */
  onClose(listener: () => void): void;
}

export interface StreamLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface StreamRegistryOptions {
  agents: AgentRepository;
  jobs: JobRepository;
  clock: Clock;
  jobEvents: JobEvents;
  agentEvents: AgentEvents;
  logger: StreamLogger;
  pingMs: number;
  disconnectGraceMs: number;
  /**
   * Completes a job's assignment at each send (fresh download URLs of its input files,
   * job-input-files.ts). When it fails the job is sent as stored: the agent asks for the URLs.
   */
  prepareAssignment?(job: Job, assignment: JobAssignment): Promise<JobAssignment>;
}

/** One agent's open stream. Until its open jobs are sent it buffers live job ids (`starting`). */
class AgentStream {
  state: 'starting' | 'live' | 'closed' = 'starting';
  /** Live job ids that arrived while starting, and the ids sent while starting (to skip twins). */
  readonly buffered: string[] = [];
  readonly sentWhileStarting = new Set<string>();
  /** Live sends, one after another, so that jobs reach the agent in creation order. */
  sending: Promise<void> = Promise.resolve();

  constructor(
    readonly agentId: string,
    private readonly sink: StreamSink,
  ) {}

  write(chunk: string): void {
    if (this.state === 'closed') return;
    if (!this.sink.write(chunk)) this.close();
  }

  /** An update job goes out as a `deploy` event (docs/ota.md), any other job as a `job` event. */
  sendAssignment(assignment: JobAssignment): void {
    const event = assignment.kind === 'update' ? StreamEvent.deploy : StreamEvent.job;
    this.write(sseEvent(event, assignment.jobId, assignment));
  }

  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.sink.end();
  }
}

/**
 * The agents' event streams of this coordinator (CONTRACT §5, docs/agent-protocol.md §6): one
 * stream per agent (a new connection closes the previous one); on connect the agent becomes
 * `connected` and gets a `job` event for each of its open jobs, oldest first, then live `job`
 * events as jobs are created for it; every `pingMs` each stream gets a `ping` and the agents'
 * lastSeenAt moves (one UPDATE for all). An agent whose stream dropped and did not come back
 * within `disconnectGraceMs` becomes `disconnected`; a revoked agent's stream is closed at once.
 *
 * Scale-out note: with several coordinators, job events must reach the instance holding the
 * stream (JobEvents) and the disconnect timers must consider streams held elsewhere.
 */
export class StreamRegistry {
  private readonly streams = new Map<string, AgentStream>();
  private readonly disconnectTimers = new Map<string, NodeJS.Timeout>();
  private readonly unsubscribe: (() => void)[] = [];
  private pingTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly o: StreamRegistryOptions) {}

  /** Subscribes to job and revocation events and starts the pings. */
  start(): void {
    this.unsubscribe.push(this.o.jobEvents.onJobCreated((agentId, jobId) => this.jobCreated(agentId, jobId)));
    this.unsubscribe.push(this.o.agentEvents.onRevoked((agent) => this.revoked(agent.id)));
    this.pingTimer = setInterval(() => void this.pingAll(), this.o.pingMs);
    this.pingTimer.unref();
    void this.expireStaleConnections();
  }

  /** Number of open streams (for status and tests). */
  get size(): number {
    return this.streams.size;
  }

  isConnected(agentId: string): boolean {
    return this.streams.has(agentId);
  }

  /**
   * Takes over a new stream for an agent whose signature was verified: replaces its previous
   * stream, marks it connected, sends its open jobs, then goes live.
   */
  async connect(agentId: string, sink: StreamSink): Promise<void> {
    const stream = new AgentStream(agentId, sink);
    if (this.closed) {
      stream.close();
      return;
    }
    const previous = this.streams.get(agentId);
    this.streams.set(agentId, stream);
    this.cancelDisconnect(agentId);
    if (previous) {
      this.o.logger.info({ agentId }, 'agent stream replaced by a new connection');
      previous.close();
    }
    sink.onClose(() => this.dropped(stream));
    try {
      if (!(await this.o.agents.markConnected(agentId, isoNow(this.o.clock)))) {
        // Revoked (or gone) between the signature check and now.
        this.forget(stream);
        return;
      }
      this.o.logger.info({ agentId }, 'agent stream connected');
      const open = await this.o.jobs.listOpenForAgent(agentId);
      for (const job of open) await this.sendJob(stream, job);
      // Live jobs that arrived meanwhile, minus those the open list already carried.
      for (let i = 0; i < stream.buffered.length && stream.state === 'starting'; i++) {
        const jobId = stream.buffered[i]!;
        if (!stream.sentWhileStarting.has(jobId)) await this.push(stream, jobId);
      }
      if (stream.state === 'starting') stream.state = 'live';
      stream.buffered.length = 0;
      stream.sentWhileStarting.clear();
    } catch (error) {
      this.o.logger.error({ err: error, agentId }, 'agent stream failed to start; closing it');
      this.forget(stream);
    }
  }

  /** Closes every stream and stops all timers (coordinator shutdown). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.pingTimer);
    for (const off of this.unsubscribe.splice(0)) off();
    for (const timer of this.disconnectTimers.values()) clearTimeout(timer);
    this.disconnectTimers.clear();
    const streams = [...this.streams.values()];
    this.streams.clear();
    for (const stream of streams) stream.close();
  }

  private jobCreated(agentId: string, jobId: string): void {
    const stream = this.streams.get(agentId);
    if (!stream) return;
    if (stream.state === 'starting') stream.buffered.push(jobId);
    else stream.sending = stream.sending.then(() => this.push(stream, jobId));
  }

  private async push(stream: AgentStream, jobId: string): Promise<void> {
    try {
      const job = await this.o.jobs.findById(jobId);
      if (job && job.agentId === stream.agentId) await this.sendJob(stream, job);
    } catch (error) {
      this.o.logger.error({ err: error, agentId: stream.agentId, jobId }, 'could not push a job to its agent');
    }
  }

  /** Sends an open job's `job` event, its assignment completed by `prepareAssignment`. */
  private async sendJob(stream: AgentStream, job: Job): Promise<void> {
    if (stream.state === 'closed' || !isOpenJobStatus(job.status)) return;
    if (stream.state === 'starting') stream.sentWhileStarting.add(job.id);
    let assignment = toAssignment(job, job.status);
    if (this.o.prepareAssignment) {
      try {
        assignment = await this.o.prepareAssignment(job, assignment);
      } catch (error) {
        this.o.logger.error(
          { err: error, agentId: stream.agentId, jobId: job.id },
          'could not prepare the download URLs of a job; sending it without them',
        );
      }
    }
    stream.sendAssignment(assignment);
  }

  private revoked(agentId: string): void {
    this.cancelDisconnect(agentId);
    const stream = this.streams.get(agentId);
    if (!stream) return;
    this.o.logger.info({ agentId }, 'agent revoked: closing its stream');
    this.forget(stream);
  }

  /** Removes a stream without scheduling a disconnect, and closes it. */
  private forget(stream: AgentStream): void {
    if (this.streams.get(stream.agentId) === stream) this.streams.delete(stream.agentId);
    stream.close();
  }

  private dropped(stream: AgentStream): void {
    stream.close();
    // A replaced, revoked or shut-down stream is no longer the agent's current one.
    if (this.closed || this.streams.get(stream.agentId) !== stream) return;
    this.streams.delete(stream.agentId);
    this.o.logger.info({ agentId: stream.agentId }, 'agent stream dropped');
    this.scheduleDisconnect(stream.agentId, isoNow(this.o.clock));
  }

  /** After the grace period without a new stream, the agent becomes `disconnected`. */
  private scheduleDisconnect(agentId: string, lastSeenAt: string | null): void {
    this.cancelDisconnect(agentId);
    const timer = setTimeout(() => {
      this.disconnectTimers.delete(agentId);
      if (this.closed || this.streams.has(agentId)) return;
      this.o.agents.markDisconnected(agentId, lastSeenAt).then(
        (changed) => {
          if (changed) this.o.logger.info({ agentId }, 'agent disconnected');
        },
        (error: unknown) => this.o.logger.error({ err: error, agentId }, 'could not mark an agent disconnected'),
      );
    }, this.o.disconnectGraceMs);
    timer.unref();
    this.disconnectTimers.set(agentId, timer);
  }

  private cancelDisconnect(agentId: string): void {
    const timer = this.disconnectTimers.get(agentId);
    if (timer) {
      clearTimeout(timer);
      this.disconnectTimers.delete(agentId);
    }
  }

  private async pingAll(): Promise<void> {
    if (this.streams.size === 0) return;
    const now = this.o.clock.now();
    const at = new Date(now).toISOString();
    const chunk = sseEvent(StreamEvent.ping, `ping-${now}`, { at });
    const ids: string[] = [];
    for (const stream of this.streams.values()) {
      stream.write(chunk);
      if (stream.state !== 'closed') ids.push(stream.agentId);
    }
    try {
      await this.o.agents.touch(ids, at);
    } catch (error) {
      this.o.logger.error({ err: error }, 'could not refresh the agents lastSeenAt');
    }
  }

  /**
   * Agents the database holds as `connected` without a stream here (this coordinator restarted)
   * get the same grace as a dropped stream to come back.
   */
  private async expireStaleConnections(): Promise<void> {
    try {
      for (const agentId of await this.o.agents.listConnectedIds()) {
        if (!this.streams.has(agentId) && !this.disconnectTimers.has(agentId)) this.scheduleDisconnect(agentId, null);
      }
    } catch (error) {
      this.o.logger.error({ err: error }, 'could not list connected agents');
    }
  }
}
