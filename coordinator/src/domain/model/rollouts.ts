import type { DamagedRow } from '../../util/json.js';
import type { Release } from './releases.js';

/** Staged rollouts (docs/ota.md, "Staged rollouts"; migration 0032). */

export const ROLLOUT_STATUSES = ['running', 'paused', 'completed', 'aborted', 'superseded'] as const;
export type RolloutStatus = (typeof ROLLOUT_STATUSES)[number];
export const PAUSED_REASONS = ['failure_threshold', 'operator'] as const;
export type PausedReason = (typeof PAUSED_REASONS)[number];

export interface RolloutPlan {
  /** Increasing percentages of the devices, the last 100. */
  waves: number[];
  soakSeconds: number;
  maxFailureRate: number;
  minAttempts: number;
}

/** What the rules of a rollout read (domain/ota/rollout-rules.ts). */
export interface RolloutState {
  status: RolloutStatus;
  plan: RolloutPlan;
  /** 0-based. */
  currentWave: number;
  /** The last wave whose failures an operator accepted by resuming it (-1: none). */
  acceptedWave: number;
  /** [startedAt, endedAt or null] of each wave so far (endedAt: its last update ended). */
  waveTimes: [string, string | null][];
}

export interface Rollout extends RolloutState {
  releaseId: string;
  orgId: string;
  applicationId: string;
  channel: string;
  /** The channel's devices at publish. */
  deviceCount: number;
  pausedReason: PausedReason | null;
  createdAt: string;
  endedAt: string | null;
}

/** A rollout in progress with the names a person knows it by (RolloutRepository.listInProgress). */
export interface RolloutInProgress extends Rollout {
  applicationSlug: string;
  version: string;
}

/** The devices new in a wave: how many, and how many of them run the release or failed to. */
export interface WaveCounts {
  devices: number;
  succeeded: number;
  failed: number;
}

export const ROLLOUT_EVENTS = [
  'start',
  'wave_end',
  'pause',
  'resume',
  'advance',
  'abort',
  'complete',
  'supersede',
] as const;
export type RolloutEventName = (typeof ROLLOUT_EVENTS)[number];

export interface RolloutEvent {
  at: string;
  event: RolloutEventName;
  /** A user id, or 'system'. */
  by: string;
  /** Why, in words (a pause's failure counts, an abort by a yank, ...). */
  detail: string | null;
}

/** A move of a rollout: its new fields, applied only if it is still as `from` says (exactly once). */
export interface RolloutMove {
  from: { status: RolloutStatus; currentWave: number };
  to: Partial<Pick<Rollout, 'status' | 'currentWave' | 'acceptedWave' | 'pausedReason' | 'waveTimes' | 'endedAt'>>;
  event: RolloutEvent;
}

export type StartRollout =
  | { outcome: 'started'; release: Release; rollout: Rollout }
  | { outcome: 'conflict'; release: Release }
  | { outcome: 'not_found' };

/** A yank: `aborted` is the release's rollout it ended (null: it had none unfinished). */
export type YankRelease =
  | { outcome: 'applied'; release: Release; aborted: Rollout | null }
  | { outcome: 'conflict'; release: Release }
  | { outcome: 'not_found' };

export interface RolloutRepository {
  /**
   * Publishes the draft and starts its rollout in one transaction: the channel's devices counted
   * and each given its wave (`assign`), the history's first entry.
   */
  publish(input: {
    applicationId: string;
    releaseId: string;
    plan: RolloutPlan;
    at: string;
    by: string;
    assign: (bindingIds: readonly string[]) => { bindingId: string; wave: number }[];
  }): Promise<StartRollout>;
  /**
   * Yanks the release (draft or published → yanked) and ends its unfinished rollout (running or
   * paused) `aborted` in one transaction, the history's entry by `by`: no move of the rollout
   * comes between the two, so it never goes on (or waits, paused) on a yanked release.
   */
  yank(input: { applicationId: string; releaseId: string; at: string; by: string }): Promise<YankRelease>;
  find(releaseId: string): Promise<Rollout | null>;
  /** Whether a rollout of the application withholds its release from some devices (any rollout but a completed one). */
  withholdsAny(applicationId: string): Promise<boolean>;
  /**
   * Rollouts in status `running`; one whose row does not parse (only a damaged or hand-edited
   * database holds one) is left out and reported in `damaged` (its release's id).
   */
  listRunning(): Promise<{ rollouts: Rollout[]; damaged: DamagedRow[] }>;
  /**
   * The organization's rollouts in progress (`running` or `paused`) of applications not deleted,
   * with their application's name and release's version, the newest first.
   */
  listInProgress(orgId: string): Promise<RolloutInProgress[]>;
  /** Counts of the devices new in each wave, by wave index (waves without devices absent). */
  waveCounts(releaseId: string, releaseSequence: number): Promise<Map<number, WaveCounts>>;
  /** Counts of the devices new in one wave. */
  countsOfWave(releaseId: string, releaseSequence: number, wave: number): Promise<WaveCounts>;
  /** Applies the move if the rollout is still as `move.from` says; the rollout after it, or null when it was not. */
  move(releaseId: string, move: RolloutMove): Promise<Rollout | null>;
  /** The bindings of the rollout's application and channel that its waves do not hold (bound after the publish). */
  boundSince(releaseId: string): Promise<string[]>;
  /** The bindings that hold a wave of the rollout. */
  bindingsOfWave(releaseId: string, wave: number): Promise<string[]>;
  history(releaseId: string): Promise<RolloutEvent[]>;
  /** The names of the agents of a wave's new devices whose update to the release failed, by name, at most `limit`. */
  failedDevicesOfWave(releaseId: string, releaseSequence: number, wave: number, limit: number): Promise<string[]>;
  /**
   * Ends, as superseded, the unfinished (running or paused) rollouts of the application's channel
   * whose release was published before the channel's newest published release (earlier, or at its
   * instant with a lower sequence); gives the release ids of those ended.
   */
  supersede(applicationId: string, channel: string, at: string): Promise<string[]>;
  /**
   * For each binding, the releases whose rollout has not completed and has not reached it yet:
   * they do not count for its desired state (docs/ota.md).
   */
  withheld(bindingIds: readonly string[]): Promise<Map<string, Set<string>>>;
}
