import type { JobStatus } from '@drover/shared';
import type { AgentRepository, AgentStatus } from '../model/agents.js';
import type { Job, JobHourCount, JobRepository } from '../model/jobs.js';
import type { RolloutInProgress, RolloutRepository } from '../model/rollouts.js';
import type { Trigger, TriggerRepository } from '../model/triggers.js';
import type { CronSchedules } from '../cron/schedule.js';
import { isoAt, type Clock } from '../../util/clock.js';

/**
 * The fleet at a glance (`GET /v1/orgs/:orgId/overview`, the dashboard's home page, `drover
 * overview`): the organization's agents by status, its trigger jobs of the last hours by outcome
 * an hour at a time, what runs, what failed last, the rollouts in progress and the next cron runs.
 */

export const OVERVIEW_DEFAULT_HOURS = 24;
/** A week: the longest window the overview counts. */
export const OVERVIEW_MAX_HOURS = 168;
/** The most running jobs the overview lists (newest first). */
export const OVERVIEW_RUNNING_SHOWN = 100;
export const OVERVIEW_FAILURES_SHOWN = 10;
export const OVERVIEW_CRON_RUNS_SHOWN = 10;

const HOUR_MS = 3_600_000;

/** The outcomes a bucket counts: the statuses a job ends in. */
export const OUTCOMES = ['success', 'failed', 'timed_out', 'cancelled', 'rejected'] as const;
export type Outcome = (typeof OUTCOMES)[number];
const isOutcome = (status: JobStatus): status is Outcome => (OUTCOMES as readonly string[]).includes(status);

/** The trigger jobs created in one hour (from `start`, an ISO instant on the hour) that ended, by outcome. */
export type HourBucket = { start: string } & Record<Outcome, number>;

/** A job with the names of its agent and trigger (null: none, or deleted since). */
export type OverviewJob = Job & { agentName: string | null; triggerName: string | null };

export interface CronRun {
  triggerId: string;
  name: string;
  /** The occurrence, an ISO instant (UTC). */
  at: string;
}

/** A rollout in progress as the overview shows it: what it rolls out, where, and how far it is. */
export interface RolloutSummary {
  releaseId: string;
  applicationId: string;
  applicationSlug: string;
  version: string;
  channel: string;
  status: RolloutInProgress['status'];
  pausedReason: RolloutInProgress['pausedReason'];
  currentWave: number;
  /** The plan's percentages of the devices, one a wave. */
  waves: number[];
  deviceCount: number;
  createdAt: string;
}

export const rolloutSummary = (r: RolloutInProgress): RolloutSummary => ({
  releaseId: r.releaseId,
  applicationId: r.applicationId,
  applicationSlug: r.applicationSlug,
  version: r.version,
  channel: r.channel,
  status: r.status,
  pausedReason: r.pausedReason,
  currentWave: r.currentWave,
  waves: r.plan.waves,
  deviceCount: r.deviceCount,
  createdAt: r.createdAt,
});

export interface Overview {
  agents: Record<AgentStatus, number>;
  jobs: {
    /** One an hour, oldest first: `hours` of them, the last the hour now under way. */
    buckets: HourBucket[];
    /** Every trigger job created since the first bucket's start, whatever its status (open ones too). */
    total: number;
  };
  running: OverviewJob[];
  recentFailures: OverviewJob[];
  rollouts: RolloutSummary[];
  nextCronRuns: CronRun[];
}

/**
 * The hours of the window ending in the hour of `now` (`hours` of them, oldest first), each with
 * its jobs' counts by outcome (0 where none), and the total of every count, open statuses
 * included. `counts` are the repository's rows (JobRepository.countTriggerJobsByHour).
 */
export function hourBuckets(now: number, hours: number, counts: readonly JobHourCount[]): Overview['jobs'] {
  const first = Math.floor(now / HOUR_MS) * HOUR_MS - (hours - 1) * HOUR_MS;
  const buckets: HourBucket[] = [];
  const byHour = new Map<string, HourBucket>();
  for (let i = 0; i < hours; i++) {
    const start = isoAt(first + i * HOUR_MS);
    const bucket: HourBucket = { start, success: 0, failed: 0, timed_out: 0, cancelled: 0, rejected: 0 };
    buckets.push(bucket);
    byHour.set(start.slice(0, 13), bucket);
  }
  let total = 0;
  for (const { hour, status, count } of counts) {
    const bucket = byHour.get(hour);
    // A job created after `now` (a clock set back) belongs to no hour shown.
    if (!bucket) continue;
    total += count;
    if (isOutcome(status)) bucket[status] += count;
  }
  return { buckets, total };
}

/** The instant the window of `hours` ending in the hour of `now` starts (its first bucket's start). */
export const windowStart = (now: number, hours: number): string =>
  isoAt(Math.floor(now / HOUR_MS) * HOUR_MS - (hours - 1) * HOUR_MS);

/**
 * The next occurrence after `now` of each enabled cron trigger among `triggers`, soonest first, at
 * most `limit` of them: what will run next, each trigger once (one that fires every minute does
 * not hide the others).
 */
export function nextCronRuns(
  triggers: readonly Trigger[],
  now: number,
  schedules: CronSchedules,
  limit: number,
): CronRun[] {
  const runs: { triggerId: string; name: string; at: number }[] = [];
  for (const t of triggers) {
    if (t.type !== 'cron' || t.cronEnabled !== true || t.cronExpression === null || t.cronTimezone === null) continue;
    const [at] = schedules.upcoming(t.cronExpression, t.cronTimezone, now, 1);
    if (at !== undefined) runs.push({ triggerId: t.id, name: t.name, at });
  }
  runs.sort((a, b) => a.at - b.at || a.name.localeCompare(b.name));
  return runs.slice(0, limit).map((r) => ({ ...r, at: isoAt(r.at) }));
}

export interface OverviewDeps {
  repos: { agents: AgentRepository; jobs: JobRepository; rollouts: RolloutRepository; triggers: TriggerRepository };
  clock: Clock;
  schedules: CronSchedules;
}

export class OverviewService {
  constructor(private readonly deps: OverviewDeps) {}

  /** The organization's overview over the last `hours` (1 to OVERVIEW_MAX_HOURS, checked by the caller's schema). */
  async read(orgId: string, hours: number): Promise<Overview> {
    const { repos, clock, schedules } = this.deps;
    const now = clock.now();
    const [agents, counts, running, failures, rollouts, triggers] = await Promise.all([
      repos.agents.countByStatus(orgId),
      repos.jobs.countTriggerJobsByHour(orgId, windowStart(now, hours)),
      repos.jobs.listRunningTriggerJobs(orgId, OVERVIEW_RUNNING_SHOWN),
      repos.jobs.listRecentFailures(orgId, OVERVIEW_FAILURES_SHOWN),
      repos.rollouts.listInProgress(orgId),
      repos.triggers.listByOrg(orgId),
    ]);
    const named = await this.withNames(orgId, [...running, ...failures], triggers);
    return {
      agents,
      jobs: hourBuckets(now, hours, counts),
      running: running.map(named),
      recentFailures: failures.map(named),
      rollouts: rollouts.map(rolloutSummary),
      nextCronRuns: nextCronRuns(triggers, now, schedules, OVERVIEW_CRON_RUNS_SHOWN),
    };
  }

  /** A function giving a job with its agent's and trigger's names (`triggers`: the organization's, not deleted). */
  private async withNames(
    orgId: string,
    jobs: readonly Job[],
    triggers: readonly Trigger[],
  ): Promise<(job: Job) => OverviewJob> {
    const agentIds = [...new Set(jobs.flatMap((j) => (j.agentId === null ? [] : [j.agentId])))];
    const agents = agentIds.length === 0 ? [] : await this.deps.repos.agents.listByIds(orgId, agentIds);
    const agentName = new Map(agents.map((a) => [a.id, a.name]));
    const triggerName = new Map(triggers.map((t) => [t.id, t.name]));
    return (job) => ({
      ...job,
      agentName: job.agentId === null ? null : (agentName.get(job.agentId) ?? null),
      triggerName: job.triggerId === null ? null : (triggerName.get(job.triggerId) ?? null),
    });
  }
}
