import { StreamEvent, type JobAssignment, type JobCancelEvent, type StreamReplacedEvent } from '@drover/shared';
import type { AgentRepository } from '../model/agents.js';
import { isOpenJobStatus, type Job, type JobRepository, type OpenJobSummary } from '../model/jobs.js';
import { jobLoader } from '../jobs/job-loader.js';
import { isoNow, type Clock } from '../../util/clock.js';
import { FailureLog } from '../../util/failure-log.js';
import type { AgentEvents } from './agent-events.js';
import type { JobEvents } from '../jobs/job-events.js';
import { noMetrics, type Metrics } from '../metrics.js';
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
  debug?(obj: object, msg: string): void;
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
  /** The streams open and the dispatch latency (docs/metrics.md); none by default. */
  metrics?: Metrics;
  /**
   * Other coordinators share the database (PostgreSQL): at each ping the streams are checked
   * against the database, for events a coordinator killed between its commit and its
   * notification never sent (`reconcileAll`).
   */
  shared?: boolean;
  /** Jobs waiting in pools (domain/fleet/pool-service.ts); without it, agents take no pool's jobs here. */
  pools?: StreamPools;
}

/** The agent of a stream: its id and its organization (whose pools it may take jobs from). */
export interface StreamAgent {
  id: string;
  orgId: string;
}

/**
 * A stream with room takes jobs waiting in its organization's pools: when it opens, when a place
 * in its queue frees, when a job of its organization is put in a pool (on any coordinator), and
 * at each ping if its organization has some (a label or a workflow may have changed since).
 */
export interface StreamPools {
  /** Takes for the agent up to `room` of the jobs waiting in its pools; gives their ids. */
  claim(agent: StreamAgent, room: number): Promise<string[]>;
  /** The organizations where jobs wait in a pool now. */
  waitingOrgs(): Promise<string[]>;
  /** The agent became `disconnected`: the pools' jobs it has not started go back to their pool; gives their ids. */
  release(agentId: string): Promise<string[]>;
}

/**
 * Between coordinators, an event normally arrives within milliseconds: the periodic check leaves
 * alone what changed less than this long ago (its event may be on its way).
 */
export const RECONCILE_AFTER_MS = 2_000;

/** The queue capacity an agent that does not announce one has (docs/agent-protocol.md: 4 jobs). */
export const DEFAULT_AGENT_QUEUE_CAPACITY = 4;

/** A replacement this soon after the stream it replaces was opened continues a run of them. */
const REPLACED_AGAIN_MS = 60_000;
/** Replacements in a row that are said as a warning (two machines with one identity). */
const REPLACEMENTS_TO_WARN = 3;
/**
 * A stream opened here this recently is kept when the agent's stream opens on another coordinator:
 * the event may be older than it (the agent came back here at once).
 */
const OPENED_ELSEWHERE_GUARD_MS = 1_000;

/**
 * One agent's open stream. Until its open jobs are read it buffers live job ids (`starting`).
 *
 * `handed` are the jobs given to the agent on this stream and not ended: they fill its queue.
 * `waiting` are jobs that waited for the agent (created while it was away, or while others
 * waited): they are handed over in creation order as the queue has room, never more at once
 * than its capacity, so a reconnect does not pour a backlog into a queue of four.
 */
class AgentStream {
  state: 'starting' | 'live' | 'closed' = 'starting';
  /** Live job ids that arrived while starting. */
  readonly buffered: string[] = [];
  /** Cancels of jobs that arrived while starting. */
  readonly bufferedCancels: string[] = [];
  /** Each handed job with the registry's hand count when it was handed (the reconciliation's cut-off). */
  readonly handed = new Map<string, number>();
  readonly waiting: string[] = [];
  /**
   * Jobs on their way to the agent, neither handed nor waiting: announced by an event whose turn to
   * be sent has not come, or being read for their send. A claim's answer and the check at a ping,
   * which run beside the sends, skip them as they skip handed and waiting ones. Each is counted (an
   * event and the read it leads to, or two events of one job), and is on its way until the last
   * of them is done.
   */
  private readonly underway = new Map<string, number>();

  /** Counts the job as on its way once more. */
  setOff(jobId: string): void {
    this.underway.set(jobId, (this.underway.get(jobId) ?? 0) + 1);
  }

  /** Undoes one `setOff` of the job. */
  arrived(jobId: string): void {
    const left = (this.underway.get(jobId) ?? 1) - 1;
    if (left > 0) this.underway.set(jobId, left);
    else this.underway.delete(jobId);
  }

  isUnderway(jobId: string): boolean {
    return this.underway.has(jobId);
  }
  /** Reads of jobs for their send under way (the open jobs read at the start count as one). */
  reads = 0;
  /**
   * Jobs that ended while a read was under way: a job read open before its end is neither sent
   * nor counted in the queue (its end found no place to free), until the reads are done.
   */
  readonly endedWhileRead = new Set<string>();
  /** A claim of pool jobs is under way for this stream (one at a time), and another was asked meanwhile. */
  claiming = false;
  claimAgain = false;
  /** Sends, one after another, so that jobs reach the agent in creation order. */
  sending: Promise<void> = Promise.resolve();

  constructor(
    readonly agent: StreamAgent,
    private readonly sink: StreamSink,
    readonly capacity: number,
    /** When the stream was opened (Unix ms): jobs created since were created while it was open. */
    readonly openedAt: number,
    /** The address the connection came from. */
    readonly peer: string | null = null,
  ) {}

  /** Replacements of the agent's streams in a row, each within REPLACED_AGAIN_MS of the one before. */
  replacements = 0;

  get agentId(): string {
    return this.agent.id;
  }

  write(chunk: string): void {
    if (this.state === 'closed') return;
    if (!this.sink.write(chunk)) this.close();
  }

  /**
   * An update job goes out as a `deploy` event (docs/ota.md), any other job as a `job` event.
   * False when the stream is closed (or closed by this write).
   */
  sendAssignment(assignment: JobAssignment): boolean {
    const event = assignment.kind === 'update' ? StreamEvent.deploy : StreamEvent.job;
    this.write(sseEvent(event, assignment.jobId, assignment));
    return this.state !== 'closed';
  }

  /** Its last event: another connection of the agent, from `by`, took its place (docs/agent-protocol.md, 6.3). */
  sendReplaced(by: string | null): void {
    const data: StreamReplacedEvent = { by };
    this.write(sseEvent(StreamEvent.replaced, `replaced-${this.openedAt}`, data));
  }

  /** A user cancelled the job (docs/jobs.md, "Cancellation"). */
  sendCancel(jobId: string): void {
    const data: JobCancelEvent = { jobId };
    this.write(sseEvent(StreamEvent.cancel, `cancel-${jobId}`, data));
  }

  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.waiting.length = 0;
    this.sink.end();
  }
}

/**
 * The agents' event streams of this coordinator (docs/agent-protocol.md, section 6): one
 * stream per agent (a new connection closes the previous one); on connect the agent becomes
 * `connected` and gets a `cancel` event for each cancel it has not confirmed, then a `job` event
 * for each of its open jobs, oldest first, then live `job` and `cancel` events as jobs are created
 * and cancelled; every `pingMs` each stream gets a `ping` and the agents'
 * lastSeenAt moves (one UPDATE for all). An agent whose stream dropped and did not come back
 * within `disconnectGraceMs` becomes `disconnected`; a revoked agent's stream is closed at once.
 *
 * Several coordinators on one database (docs/architecture.md, "Several coordinators"): job
 * creations, cancels, ends and revocations committed on any of them reach the one holding the
 * agent's stream (JobEvents, AgentEvents, through the cluster relay); a stream opened elsewhere
 * stops the countdown to `disconnected` here; after a gap in those events every stream reads its
 * agent's jobs again.
 */
export class StreamRegistry {
  private readonly streams = new Map<string, AgentStream>();
  /** Which stream each handed, not yet ended job went out on. */
  private readonly handedTo = new Map<string, AgentStream>();
  private readonly disconnectTimers = new Map<string, NodeJS.Timeout>();
  /** Agents marked disconnected here whose pools' jobs go back once they stayed so for two pings. */
  private readonly releaseTimers = new Map<string, NodeJS.Timeout>();
  /** The agents whose stream here was taken by one on another coordinator: how often in a row, and when last. */
  private readonly replacedElsewhere = new Map<string, { count: number; at: number }>();
  private readonly unsubscribe: (() => void)[] = [];
  /** Jobs handed so far: each handed job records the count at its hand. */
  private hands = 0;
  /** The streams reading jobs for their send: a job that ends meanwhile, handed nowhere here, is noted on each. */
  private readonly reading = new Set<AgentStream>();
  /**
   * The pings' updates of lastSeenAt in flight, which mark their agents connected: a countdown to
   * `disconnected` that ends meanwhile waits for them, else an agent whose stream dropped after its
   * ping went out would be marked connected again after, with no stream anywhere.
   */
  private readonly touching = new Set<Promise<void>>();
  private pingTimer: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly metrics: Metrics;
  /** Jobs read for sending: those of one turn of the event loop (a publish's hundreds) in one read. */
  private readonly readJob: (id: string) => Promise<Job | undefined>;
  /** The ping's database work, failing at each ping while the database is down: logged once each. */
  private readonly touchFailures: FailureLog;
  private readonly poolFailures: FailureLog;
  private readonly orphanFailures: FailureLog;
  private readonly reconcileFailures: FailureLog;

  constructor(private readonly options: StreamRegistryOptions) {
    this.metrics = options.metrics ?? noMetrics;
    const now = () => options.clock.now();
    this.touchFailures = new FailureLog(options.logger, 'could not refresh the agents lastSeenAt', now);
    this.poolFailures = new FailureLog(
      options.logger,
      'could not read the organizations with jobs waiting in a pool',
      now,
    );
    this.orphanFailures = new FailureLog(options.logger, 'could not expire the agents no coordinator holds', now);
    this.reconcileFailures = new FailureLog(
      options.logger,
      'could not check the agents streaming here against their jobs',
      now,
    );
    this.readJob = jobLoader(options.jobs, options.logger, "its agent's stream");
  }

  /** Subscribes to job and revocation events and starts the pings. */
  start(): void {
    this.unsubscribe.push(this.options.jobEvents.onJobCreated((agentId, jobId) => this.jobCreated(agentId, jobId)));
    this.unsubscribe.push(this.options.jobEvents.onJobResent((agentId, jobId) => this.jobResent(agentId, jobId)));
    this.unsubscribe.push(this.options.jobEvents.onJobPooled((orgId) => this.offerPool(orgId)));
    this.unsubscribe.push(this.options.jobEvents.onJobFinished((jobId) => this.jobEnded(jobId), 'anywhere'));
    this.unsubscribe.push(
      this.options.jobEvents.onCancelRequested((agentId, jobId) => this.cancelRequested(agentId, jobId)),
    );
    this.unsubscribe.push(
      this.options.jobEvents.onGap(() => {
        this.resyncAll();
        void this.closeRevoked();
      }),
    );
    this.unsubscribe.push(this.options.agentEvents.onRevoked((agent) => this.revoked(agent.id), 'anywhere'));
    this.unsubscribe.push(this.options.agentEvents.onStreamOpenedElsewhere((agentId) => this.openedElsewhere(agentId)));
    this.unsubscribe.push(this.metrics.readAgentsConnected(() => this.streams.size));
    this.pingTimer = setInterval(() => void this.pingAll(), this.options.pingMs);
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
  async connect(
    agent: StreamAgent,
    sink: StreamSink,
    capacity = DEFAULT_AGENT_QUEUE_CAPACITY,
    agentVersion?: string,
    peer: string | null = null,
  ): Promise<void> {
    const agentId = agent.id;
    const stream = new AgentStream(agent, sink, capacity, this.options.clock.now(), peer);
    if (this.closed) {
      stream.close();
      return;
    }
    const previous = this.streams.get(agentId);
    this.streams.set(agentId, stream);
    this.cancelDisconnect(agentId);
    if (previous) this.replace(previous, stream);
    sink.onClose(() => this.dropped(stream));
    try {
      if (!(await this.options.agents.markConnected(agentId, isoNow(this.options.clock), capacity, agentVersion))) {
        // Revoked (or gone) between the signature check and now.
        this.forget(stream);
        return;
      }
      this.options.logger.info({ agentId, capacity, agentVersion }, 'agent stream connected');
      this.options.agentEvents.streamOpened(agentId);
      // Cancels the agent has not confirmed come first, before any job: a job cancelled while it
      // was away is stopped, or taken out of its queue, before anything new arrives.
      const cancels = await this.options.jobs.listUnconfirmedCancels(agentId);
      for (const jobId of cancels) stream.sendCancel(jobId);
      const seen = new Set<string>();
      // A job that ends from the read of the open jobs on is not counted (endedWhileRead).
      this.readStarted(stream);
      try {
        const { jobs: listed, damaged } = await this.options.jobs.listOpenForAgent(agentId);
        for (const { id, column, error } of damaged) {
          this.options.logger.error(
            { err: error, agentId, jobId: id, column },
            `job ${id} is left out of its agent's stream: its ${column} does not parse (a damaged database)`,
          );
        }
        const open = listed.filter((job) => !stream.endedWhileRead.has(job.id));
        // Queued and running jobs are in the agent's hands already: sent again, they fill its queue;
        // pending ones take the room left, in creation order, and the rest wait. A running job whose
        // cancel was just sent fills its place too, without a job event.
        let room = capacity - open.filter((job) => job.status !== 'pending').length;
        for (const job of open) {
          seen.add(job.id);
          if (stream.endedWhileRead.has(job.id)) continue;
          if (job.cancelRequestedAt !== null) this.markHanded(stream, job.id);
          else if (job.status !== 'pending') await this.hand(stream, job);
          else if (room > 0 && stream.waiting.length === 0) {
            room -= 1;
            await this.hand(stream, job);
          } else stream.waiting.push(job.id);
        }
      } finally {
        this.readDone(stream);
      }
      // Live jobs that arrived meanwhile, minus those the open list already carried, wait behind it.
      for (const jobId of stream.buffered) if (!seen.has(jobId)) stream.waiting.push(jobId);
      stream.buffered.length = 0;
      for (const jobId of stream.bufferedCancels) stream.sendCancel(jobId);
      stream.bufferedCancels.length = 0;
      if (stream.state === 'starting') stream.state = 'live';
      stream.sending = stream.sending.then(() => this.handWaiting(stream));
      await stream.sending;
      this.offerRoom(stream);
    } catch (error) {
      this.options.logger.error({ err: error, agentId }, 'agent stream failed to start; closing it');
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
    for (const timer of this.releaseTimers.values()) clearTimeout(timer);
    this.releaseTimers.clear();
    const streams = [...this.streams.values()];
    this.streams.clear();
    for (const stream of streams) this.closeStream(stream);
  }

  /**
   * A new job for a connected agent goes out at once when nothing waits for the agent (its queue
   * decides: a full one refuses it, docs/agent-protocol.md); behind jobs that wait, it waits its turn.
   */
  private jobCreated(agentId: string, jobId: string): void {
    const stream = this.streams.get(agentId);
    if (!stream) return;
    if (stream.state === 'starting') {
      stream.buffered.push(jobId);
      return;
    }
    stream.setOff(jobId);
    stream.sending = stream.sending.then(async () => {
      if (stream.waiting.length > 0) {
        stream.waiting.push(jobId);
        stream.arrived(jobId);
        await this.handWaiting(stream);
      } else {
        await this.handById(stream, jobId);
        stream.arrived(jobId);
      }
    });
  }

  /**
   * A pending job the agent dropped goes to it again, at once (it holds its place in the queue
   * already); a stream still starting sends it with the open jobs it reads.
   */
  private jobResent(agentId: string, jobId: string): void {
    const stream = this.streams.get(agentId);
    if (!stream || stream.state === 'starting') return;
    stream.setOff(jobId);
    stream.sending = stream.sending.then(async () => {
      await this.handById(stream, jobId, true);
      stream.arrived(jobId);
    });
  }

  /**
   * A user cancelled a job of the agent: its stream, if open here, gets a `cancel` event, in turn
   * with the jobs being sent (so a queue slot the cancel frees is free before the next job).
   */
  private cancelRequested(agentId: string, jobId: string): void {
    const stream = this.streams.get(agentId);
    if (!stream) return;
    if (stream.state === 'starting') {
      stream.bufferedCancels.push(jobId);
      return;
    }
    stream.sending = stream.sending.then(() => stream.sendCancel(jobId));
  }

  /** A job ended: its place in the queue of the agent it was handed to is free for one that waits. */
  private jobEnded(jobId: string): void {
    const stream = this.handedTo.get(jobId);
    if (!stream) {
      // A send that read it open before its end must not take a place it would never free.
      for (const reading of this.reading) reading.endedWhileRead.add(jobId);
      return;
    }
    this.handedTo.delete(jobId);
    stream.handed.delete(jobId);
    if (stream.waiting.length > 0) stream.sending = stream.sending.then(() => this.handWaiting(stream));
    else this.offerRoom(stream);
  }

  /** A job of the organization waits in a pool: its streams with room and nothing waiting take it. */
  private offerPool(orgId: string): void {
    for (const stream of this.streams.values()) {
      if (stream.agent.orgId === orgId && stream.waiting.length === 0) this.offerRoom(stream);
    }
  }

  /**
   * The agent's queue has room and nothing waits for it: it takes jobs waiting in a pool it belongs
   * to (docs/fleets.md, "Pools"), as many as the room, which join its waiting jobs. One claim at a
   * time per stream; one asked meanwhile runs after it, on the room left then.
   */
  private offerRoom(stream: AgentStream): void {
    const pools = this.options.pools;
    if (!pools || stream.state !== 'live') return;
    if (stream.claiming) {
      stream.claimAgain = true;
      return;
    }
    const room = stream.capacity - stream.handed.size - stream.waiting.length;
    if (room <= 0) return;
    stream.claiming = true;
    pools
      .claim(stream.agent, room)
      .then((jobIds) => {
        // The check at a ping may have found a job taken meanwhile (its claim committed) already.
        const waiting = new Set(stream.waiting);
        const taken = jobIds.filter((id) => !stream.handed.has(id) && !waiting.has(id) && !stream.isUnderway(id));
        if (taken.length === 0 || stream.state !== 'live') return;
        stream.waiting.push(...taken);
        stream.sending = stream.sending.then(() => this.handWaiting(stream));
        return stream.sending;
      })
      .catch((error: unknown) =>
        this.options.logger.error({ err: error, agentId: stream.agentId }, 'could not take jobs waiting in a pool'),
      )
      .finally(() => {
        stream.claiming = false;
        if (stream.claimAgain) {
          stream.claimAgain = false;
          this.offerRoom(stream);
        }
      });
  }

  /**
   * Events of other coordinators may have been missed (domain/jobs/job-events.ts, `onGap`): each live
   * stream reads its agent's jobs again and reconciles.
   */
  private resyncAll(): void {
    for (const stream of this.streams.values()) {
      if (stream.state !== 'live') continue;
      const cutoff = this.hands;
      stream.sending = stream.sending.then(async () => {
        try {
          const open = await this.options.jobs.listOpenOfAgents([stream.agentId]);
          await this.reconcile(stream, open, cutoff, Number.POSITIVE_INFINITY);
        } catch (error) {
          this.options.logger.error({ err: error, agentId: stream.agentId }, "could not read an agent's jobs again");
        }
      });
    }
  }

  /**
   * Events of other coordinators may have been missed, a revocation among them: the streams of
   * agents revoked (or gone) since are closed, by one read of the agents per organization.
   */
  private async closeRevoked(): Promise<void> {
    const byOrg = new Map<string, string[]>();
    for (const { agent } of this.streams.values()) {
      const ids = byOrg.get(agent.orgId) ?? [];
      ids.push(agent.id);
      byOrg.set(agent.orgId, ids);
    }
    for (const [orgId, ids] of byOrg) {
      let kept: Set<string>;
      try {
        const agents = await this.options.agents.listByIds(orgId, ids);
        kept = new Set(agents.filter((a) => a.status !== 'revoked').map((a) => a.id));
      } catch (error) {
        this.options.logger.error({ err: error, orgId }, 'could not read the agents streaming here again');
        continue;
      }
      for (const id of ids) if (!kept.has(id)) this.revoked(id);
    }
  }

  /**
   * Between coordinators, at each ping: one read of the open jobs of every agent streaming here,
   * reconciled with what each stream holds, for the events of a coordinator killed after its
   * commit and before its notification. Only what is older than RECONCILE_AFTER_MS counts.
   */
  private async reconcileAll(): Promise<void> {
    const live = [...this.streams.values()].filter((stream) => stream.state === 'live');
    if (live.length === 0) return;
    const cutoff = this.hands;
    const before = this.options.clock.now() - RECONCILE_AFTER_MS;
    let open: OpenJobSummary[];
    try {
      open = await this.options.jobs.listOpenOfAgents(live.map((stream) => stream.agentId));
      this.reconcileFailures.succeeded();
    } catch (error) {
      this.reconcileFailures.failed(error);
      return;
    }
    const byAgent = new Map<string, OpenJobSummary[]>();
    for (const job of open) byAgent.set(job.agentId, [...(byAgent.get(job.agentId) ?? []), job]);
    for (const stream of live) {
      if (this.streams.get(stream.agentId) !== stream) continue;
      const jobs = byAgent.get(stream.agentId) ?? [];
      stream.sending = stream.sending.then(() => this.reconcile(stream, jobs, cutoff, before));
    }
  }

  /**
   * Brings a stream in line with its agent's open jobs as read: a job it handed before `cutoff`
   * (a hand count) that is no longer open has ended (its place is free); a pending job created
   * before `createdBefore` (Unix ms) that it neither handed nor holds waiting joins the waiting
   * ones; a cancel not confirmed is sent again (the agent ignores one it already acted on).
   */
  private async reconcile(
    stream: AgentStream,
    open: readonly OpenJobSummary[],
    cutoff: number,
    createdBefore: number,
  ): Promise<void> {
    if (stream.state !== 'live') return;
    const openIds = new Set(open.map((job) => job.id));
    const ended = [...stream.handed].filter(([jobId, hand]) => hand <= cutoff && !openIds.has(jobId));
    for (const [jobId] of ended) this.jobEnded(jobId);
    // One ended by a cancel whose event was missed may still wait in the agent's queue, where it
    // would take a place this stream now counts free: its cancel takes it out (read by id, 500 a
    // statement, as only the ends no event announced come here).
    if (ended.length > 0) {
      try {
        const endedJobs = await Promise.all(ended.map(([jobId]) => this.readJob(jobId)));
        for (const job of endedJobs) {
          if (stream.state !== 'live' || !job || job.agentId !== stream.agentId) continue;
          if (job.cancelRequestedAt !== null && job.cancelAckedAt === null) stream.sendCancel(job.id);
        }
      } catch (error) {
        // Sent again at its next connect (the cancels it has not confirmed); its sends go on.
        this.options.logger.error(
          { err: error, agentId: stream.agentId },
          'could not read the jobs that ended unannounced',
        );
      }
    }
    const waiting = new Set(stream.waiting);
    const missed: string[] = [];
    for (const job of open) {
      const old = Date.parse(job.createdAt) < createdBefore;
      const held = stream.handed.has(job.id) || waiting.has(job.id) || stream.isUnderway(job.id);
      if (job.status === 'pending' && old && !held) missed.push(job.id);
      if (job.cancelUnconfirmed && old) stream.sendCancel(job.id);
    }
    if (missed.length > 0) {
      this.options.logger.info(
        { agentId: stream.agentId, jobs: missed.length },
        'jobs no event announced: sending them',
      );
      stream.waiting.push(...missed);
    }
    await this.handWaiting(stream);
  }

  /** Hands waiting jobs over, oldest first, while the agent's queue has room. */
  private async handWaiting(stream: AgentStream): Promise<void> {
    while (stream.state === 'live' && stream.waiting.length > 0 && stream.handed.size < stream.capacity) {
      await this.handById(stream, stream.waiting.shift()!);
    }
  }

  private async handById(stream: AgentStream, jobId: string, again = false): Promise<void> {
    stream.setOff(jobId);
    this.readStarted(stream);
    try {
      const job = await this.readJob(jobId);
      if (job && job.agentId === stream.agentId) await this.hand(stream, job, again);
    } catch (error) {
      this.options.logger.error({ err: error, agentId: stream.agentId, jobId }, 'could not push a job to its agent');
    } finally {
      this.readDone(stream);
      stream.arrived(jobId);
    }
  }

  /** A read of jobs for the stream's sends begins: jobs that end from now on are noted on it. */
  private readStarted(stream: AgentStream): void {
    stream.reads += 1;
    this.reading.add(stream);
  }

  /** A read of the stream's is done, its jobs handed or not: once none is left, the ends noted go. */
  private readDone(stream: AgentStream): void {
    stream.reads -= 1;
    if (stream.reads > 0) return;
    this.reading.delete(stream);
    stream.endedWhileRead.clear();
  }

  /** Counts a job as in the agent's queue (it holds it already). */
  private markHanded(stream: AgentStream, jobId: string): void {
    stream.handed.set(jobId, ++this.hands);
    this.handedTo.set(jobId, stream);
  }

  /**
   * Sends an open job's event, its assignment completed by `prepareAssignment`, and counts it as
   * handed. A job this stream sent already is not sent again, whatever path finds it (a late
   * `job_created` event after the check at a ping sent it, with the job read `pending` while its
   * agent's accept was on its way through another coordinator): the copy could reach the agent
   * after the job ended there. Only `again` sends it again, a pending one: its agent dropped it (an
   * update job whose device reported without it, ota/engine.ts `repushJobId`). A job that ended
   * after it was read (endedWhileRead) is neither: its end found no place of it to free.
   */
  private async hand(stream: AgentStream, job: Job, again = false): Promise<void> {
    if (stream.state === 'closed' || !isOpenJobStatus(job.status) || stream.endedWhileRead.has(job.id)) return;
    if (stream.handed.has(job.id) && !(again && job.status === 'pending')) return;
    this.markHanded(stream, job.id);
    let assignment = toAssignment(job, job.status);
    if (this.options.prepareAssignment) {
      try {
        assignment = await this.options.prepareAssignment(job, assignment);
      } catch (error) {
        this.options.logger.error(
          { err: error, agentId: stream.agentId, jobId: job.id },
          'could not prepare the download URLs of a job; sending it without them',
        );
      }
    }
    const sent = stream.sendAssignment(assignment);
    // Dispatch latency: from its creation to its first send, for a job created while the stream was
    // open (one that waited for the agent to come back is its absence, not the dispatch).
    const createdAt = Date.parse(job.createdAt);
    if (sent && job.status === 'pending' && createdAt >= stream.openedAt) {
      this.metrics.jobDispatched(Math.max(0, this.options.clock.now() - createdAt) / 1000);
    }
  }

  private revoked(agentId: string): void {
    this.cancelDisconnect(agentId);
    const stream = this.streams.get(agentId);
    if (!stream) return;
    this.options.logger.info({ agentId }, 'agent revoked: closing its stream');
    this.forget(stream);
  }

  /** Removes a stream without scheduling a disconnect, and closes it. */
  private forget(stream: AgentStream): void {
    if (this.streams.get(stream.agentId) === stream) this.streams.delete(stream.agentId);
    this.closeStream(stream);
  }

  /**
   * A new connection of the agent takes the place of its stream, which is told so before it ends.
   * An agent that reconnects over a connection it thinks dead replaces a stream now and then; one
   * replaced again and again, minutes on end, is two machines with one identity, each taking the
   * stream from the other (a copied state directory): said as a warning.
   */
  private replace(previous: AgentStream, stream: AgentStream): void {
    const { agentId } = stream;
    const soon = stream.openedAt - previous.openedAt < REPLACED_AGAIN_MS;
    stream.replacements = soon ? previous.replacements + 1 : 1;
    const where = { agentId, from: stream.peer, previousFrom: previous.peer };
    if (stream.replacements >= REPLACEMENTS_TO_WARN) {
      this.options.logger.warn(
        { ...where, replacements: stream.replacements },
        "agent stream replaced again and again: two machines may be using this agent's identity (a copied state directory); enroll one of them again",
      );
    } else this.options.logger.info(where, 'agent stream replaced by a new connection');
    previous.sendReplaced(stream.peer);
    this.closeStream(previous);
  }

  /**
   * The agent's stream opened on another coordinator: it is not disconnected, and a stream of it
   * here is closed as a new connection here would close it (docs/agent-protocol.md, 6.3): an agent
   * reads one stream at a time, so the one here is a connection it left, or a second machine with
   * its identity, which would otherwise be handed every job too. One opened here within the last
   * OPENED_ELSEWHERE_GUARD_MS is kept: it may be the newer.
   */
  private openedElsewhere(agentId: string): void {
    this.cancelDisconnect(agentId);
    const stream = this.streams.get(agentId);
    const now = this.options.clock.now();
    if (!stream || now - stream.openedAt < OPENED_ELSEWHERE_GUARD_MS) return;
    this.streams.delete(agentId);
    const last = this.replacedElsewhere.get(agentId);
    const count = last && now - last.at < REPLACED_AGAIN_MS ? last.count + 1 : 1;
    this.replacedElsewhere.set(agentId, { count, at: now });
    const where = { agentId, previousFrom: stream.peer };
    if (count >= REPLACEMENTS_TO_WARN) {
      this.options.logger.warn(
        { ...where, replacements: count },
        "agent stream replaced again and again from another coordinator: two machines may be using this agent's identity (a copied state directory); enroll one of them again",
      );
    } else this.options.logger.info(where, 'agent stream replaced by a connection on another coordinator');
    stream.sendReplaced(null);
    this.closeStream(stream);
  }

  /** Closes a stream; the jobs handed on it are counted again by the agent's next stream. */
  private closeStream(stream: AgentStream): void {
    stream.close();
    for (const jobId of stream.handed.keys()) if (this.handedTo.get(jobId) === stream) this.handedTo.delete(jobId);
  }

  private dropped(stream: AgentStream): void {
    this.closeStream(stream);
    // A replaced, revoked or shut-down stream is no longer the agent's current one.
    if (this.closed || this.streams.get(stream.agentId) !== stream) return;
    this.streams.delete(stream.agentId);
    this.options.logger.info({ agentId: stream.agentId }, 'agent stream dropped');
    const at = isoNow(this.options.clock);
    this.scheduleDisconnect(stream.agentId, at, at);
  }

  /**
   * After the grace period without a new stream, the agent becomes `disconnected`, unless it was
   * seen after `since` (its stream opened, or was pinged, on another coordinator of the database).
   */
  private scheduleDisconnect(agentId: string, lastSeenAt: string | null, since: string): void {
    this.cancelDisconnect(agentId);
    const timer = setTimeout(() => {
      this.disconnectTimers.delete(agentId);
      void Promise.all(this.touching)
        .then(async () => {
          if (this.closed || this.streams.has(agentId)) return;
          if (await this.options.agents.markDisconnected(agentId, lastSeenAt, since)) {
            this.options.logger.info({ agentId }, 'agent disconnected');
            this.scheduleRelease(agentId);
          }
        })
        .catch((error: unknown) =>
          this.options.logger.error({ err: error, agentId }, 'could not mark an agent disconnected'),
        );
    }, this.options.disconnectGraceMs);
    timer.unref();
    this.disconnectTimers.set(agentId, timer);
  }

  /**
   * A disconnected agent's jobs of pools that it has not started go to an agent that can run them,
   * once it has stayed disconnected for two pings: a coordinator that marked it so while its stream
   * had just opened on another (whose event had not arrived yet) is corrected by that one's next
   * ping, which marks it connected again, and the release then finds it connected and moves nothing.
   */
  private scheduleRelease(agentId: string): void {
    if (!this.options.pools || this.releaseTimers.has(agentId)) return;
    const timer = setTimeout(() => {
      this.releaseTimers.delete(agentId);
      if (!this.closed && !this.streams.has(agentId)) void this.releasePoolJobs(agentId);
    }, 2 * this.options.pingMs);
    timer.unref();
    this.releaseTimers.set(agentId, timer);
  }

  private async releasePoolJobs(agentId: string): Promise<void> {
    try {
      const jobIds = (await this.options.pools?.release(agentId)) ?? [];
      if (jobIds.length > 0) {
        this.options.logger.info(
          { agentId, jobIds },
          'jobs of pools the agent had not started went back to their pool',
        );
      }
    } catch (error) {
      this.options.logger.error(
        { err: error, agentId },
        "could not put a disconnected agent's jobs back in their pools",
      );
    }
  }

  private cancelDisconnect(agentId: string): void {
    const timer = this.disconnectTimers.get(agentId);
    if (timer) {
      clearTimeout(timer);
      this.disconnectTimers.delete(agentId);
    }
  }

  private async pingAll(): Promise<void> {
    const now = this.options.clock.now();
    for (const [agentId, last] of this.replacedElsewhere) {
      if (now - last.at >= REPLACED_AGAIN_MS) this.replacedElsewhere.delete(agentId);
    }
    if (this.streams.size > 0) await this.pingStreams(now);
    if (this.options.shared) await this.expireOrphans(now);
  }

  private async pingStreams(now: number): Promise<void> {
    const at = new Date(now).toISOString();
    const chunk = sseEvent(StreamEvent.ping, `ping-${now}`, { at });
    const ids: string[] = [];
    for (const stream of this.streams.values()) {
      stream.write(chunk);
      if (stream.state !== 'closed') ids.push(stream.agentId);
    }
    const touched = this.options.agents.touch(ids, at).then(
      () => this.touchFailures.succeeded(),
      (error: unknown) => this.touchFailures.failed(error),
    );
    this.touching.add(touched);
    await touched;
    this.touching.delete(touched);
    if (this.options.shared) await this.reconcileAll();
    // A label or a workflow that changed since may have put an agent with room in a pool.
    if (this.options.pools) {
      try {
        for (const orgId of await this.options.pools.waitingOrgs()) this.offerPool(orgId);
        this.poolFailures.succeeded();
      } catch (error) {
        this.poolFailures.failed(error);
      }
    }
  }

  /**
   * Agents the database holds as `connected` that no coordinator has pinged for a grace period and
   * two pings: the coordinator that held their streams died and was not started again (its
   * restart would expire them), and they did not come back elsewhere. Each becomes `disconnected`,
   * unless a coordinator sees it meanwhile; a pool no longer hands them jobs.
   */
  private async expireOrphans(now: number): Promise<void> {
    const since = new Date(now - this.options.disconnectGraceMs - 2 * this.options.pingMs).toISOString();
    try {
      for (const agentId of await this.options.agents.listConnectedIds(since)) {
        if (this.streams.has(agentId) || this.disconnectTimers.has(agentId)) continue;
        if (await this.options.agents.markDisconnected(agentId, null, since)) {
          this.options.logger.info(
            { agentId, lastSeenBefore: since },
            'agent disconnected: no coordinator holds its stream',
          );
          this.scheduleRelease(agentId);
        }
      }
      this.orphanFailures.succeeded();
    } catch (error) {
      this.orphanFailures.failed(error);
    }
  }

  /**
   * Agents the database holds as `connected` without a stream here (this coordinator restarted)
   * get the same grace as a dropped stream to come back, here or on another coordinator of the
   * database (whose pings move their lastSeenAt past this instant).
   */
  private async expireStaleConnections(): Promise<void> {
    const since = isoNow(this.options.clock);
    try {
      for (const agentId of await this.options.agents.listConnectedIds()) {
        if (!this.streams.has(agentId) && !this.disconnectTimers.has(agentId)) {
          this.scheduleDisconnect(agentId, null, since);
        }
      }
    } catch (error) {
      this.options.logger.error({ err: error }, 'could not list connected agents');
    }
  }
}
