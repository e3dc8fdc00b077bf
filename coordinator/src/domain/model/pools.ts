import type { Job } from './jobs.js';

/** The agent's version of a workflow, as a claim of a job of that workflow needs it. */
export interface PoolVersion {
  id: string;
  /** Its timeout: the job's, once the agent takes it. */
  timeoutMs: number | null;
  /** Whether it takes a job's params (stored as another version resolved them): it would refuse the job otherwise. */
  takes(params: Record<string, unknown>): boolean;
}

/** What a claim of a pool's waiting jobs needs to know of the agent that takes them. */
export interface PoolTaker {
  id: string;
  orgId: string;
  /** The workflows it reports, by name: its version of each. */
  workflows: ReadonlyMap<string, PoolVersion>;
  /** Whether its labels meet a trigger's selector (canonical text). */
  matches(selector: string): boolean;
  /** Its queue's capacity: the open jobs given to it (not held back by a batch) fill it. */
  capacity: number;
}

export interface PoolRepository {
  /**
   * Gives the agent up to `room` of the jobs waiting in its organization's pools (oldest first)
   * whose trigger selects it and whose workflow it reports in a version that takes their params
   * (the job then has that version and its timeout), and never more than its queue has
   * room for as the database holds it then (jobs given to it meanwhile, by an admission on any
   * coordinator, count): each taken once, whichever agents and coordinators claim at the same
   * time.
   */
  claim(taker: PoolTaker, room: number): Promise<Job[]>;
  /** Whether any job waits in a pool of the organization (a read, no lock). */
  anyWaiting(orgId: string): Promise<boolean>;
  /** The organizations where jobs wait in a pool. */
  waitingOrgs(): Promise<string[]>;
  /** The jobs of the trigger waiting in its pool, oldest first. */
  waitingOf(orgId: string, triggerId: string): Promise<Job[]>;
  /**
   * The agent is `disconnected`: the jobs of pools handed to it that it has not started go back
   * to their pool (`pending`, no agent), for another agent to take; a start it sends later finds
   * the job no longer its own. Gives the jobs as they are now; none while the agent is connected
   * again, or for a batch's jobs, which are each agent's own.
   */
  release(agentId: string): Promise<Job[]>;
}
