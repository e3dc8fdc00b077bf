import type { Application } from '../model/applications.js';
import type { AuditAction } from '../model/audit.js';
import type { Release } from '../model/releases.js';
import type {
  PausedReason,
  Rollout,
  RolloutEvent,
  RolloutMove,
  RolloutPlan,
  RolloutStatus,
} from '../model/rollouts.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { ChatOutboxRepository } from '../model/chat-outbox.js';
import type { JobEvents } from '../jobs/job-events.js';
import { AppError, notFound } from '../../errors.js';
import { percentWords } from '@drover/shared';
import { isoNow } from '../../util/clock.js';
import type { OtaContext } from './context.js';
import { findRelease, publishRelease, yankRelease } from './releases.js';
import { assignWaves, cumulativeWaveSizes, nextStep, soakEndsAt } from './rollout-rules.js';

/** How often running rollouts are looked at without an update job's end (soaks ending, a restart). */
export const ROLLOUT_TICK_MS = 5_000;
/** A job's end is looked at after this long, so that the ends of a wave are looked at together. */
const AFTER_JOB_END_MS = 200;

export interface RolloutWaveView {
  percent: number;
  /** The wave's cumulative device count. */
  devices: number;
  /** Of the devices new in this wave. */
  succeeded: number;
  failed: number;
  pending: number;
  startedAt: string | null;
  /** Its last update ended (the soak follows). */
  endedAt: string | null;
}

export interface RolloutView {
  releaseId: string;
  applicationId: string;
  channel: string;
  status: RolloutStatus;
  currentWave: number;
  deviceCount: number;
  soakSeconds: number;
  maxFailureRate: number;
  minAttempts: number;
  waves: RolloutWaveView[];
  pausedReason: PausedReason | null;
  /** When the current wave's soak ends (null: its updates have not all ended, or the rollout is not running). */
  soakEndsAt: string | null;
  history: RolloutEvent[];
  createdAt: string;
  endedAt: string | null;
}

/** Who moves a rollout: a user of the organization, or Drover itself. */
export type RolloutActor = { userId: string } | 'system';

export type OperatorMove = 'pause' | 'resume' | 'advance' | 'abort';

const MOVE_FROM: Record<OperatorMove, readonly RolloutStatus[]> = {
  pause: ['running'],
  resume: ['paused'],
  advance: ['running', 'paused'],
  abort: ['running', 'paused'],
};

export interface RolloutServiceOptions {
  ctx: OtaContext;
  /** Where a pause by the failure threshold is posted, when the application has a chat channel. */
  chat?: { outbox: Pick<ChatOutboxRepository, 'enqueue'>; queued(): void };
  audit: AuditLog;
  jobEvents: JobEvents;
  logger: { info(obj: object, msg: string): void; error(obj: object, msg: string): void };
  tickMs?: number;
}

/**
 * Staged rollouts (docs/ota.md, "Staged rollouts"): the one owner of their rules. A release
 * published with a plan reaches its channel's devices wave by wave (rollout-rules.ts): only the
 * devices of the waves so far have it as desired (the evaluation reads which releases are withheld
 * from a binding). Running rollouts are looked at after update jobs end and every `tickMs`: a
 * wave whose failure rate passes the threshold pauses the rollout, one whose updates all ended
 * soaks, then the next wave starts. Every move is a conditional write (the rollout as it was
 * read), so with several coordinators each move happens once; the state is in the database, so a
 * restarted coordinator goes on where it was.
 */
export class RolloutService {
  private timer: NodeJS.Timeout | undefined;
  private soonTimer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private again = false;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly options: RolloutServiceOptions) {}

  start(): void {
    // A job's end may end a wave; with no rollout running (as last seen), the 5 s look suffices.
    this.unsubscribe = this.options.jobEvents.onJobFinished(() => {
      if (this.anyRunning) this.soon();
    }, 'here');
    this.timer = setInterval(() => this.soon(0), this.options.tickMs ?? ROLLOUT_TICK_MS);
    this.timer.unref();
    this.soon(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearInterval(this.timer);
    clearTimeout(this.soonTimer);
    await this.ticking.catch(() => undefined);
  }

  /** Publishes a draft with a rollout plan (checked by the caller): wave 1's devices get it. */
  async publish(
    app: Application,
    releaseId: string,
    plan: RolloutPlan,
    actor: { userId: string },
  ): Promise<{ release: Release; rollout: Rollout }> {
    const { ctx } = this.options;
    const at = isoNow(ctx.clock);
    const started = await ctx.repos.rollouts.publish({
      applicationId: app.id,
      releaseId,
      plan,
      at,
      by: actor.userId,
      assign: (bindingIds) => assignWaves(bindingIds, releaseId, plan.waves),
    });
    if (started.outcome === 'not_found') throw notFound('Release');
    if (started.outcome === 'conflict') {
      throw new AppError(
        'conflict',
        started.release.status === 'published'
          ? 'The release is already published'
          : 'A yanked release cannot be published again; create a new release',
        { details: { releaseId, status: started.release.status } },
      );
    }
    const { release, rollout } = started;
    await this.superseded(release);
    await this.audit(actor, 'release.rollout.start', rollout, {
      waves: plan.waves,
      soakSeconds: plan.soakSeconds,
      maxFailureRate: plan.maxFailureRate,
      minAttempts: plan.minAttempts,
      devices: rollout.deviceCount,
    });
    // Only wave 1's devices have a new desired release; the others keep theirs until their wave.
    await ctx.ota.evaluateIds(await ctx.repos.rollouts.bindingsOfWave(release.id, 0), 'publish');
    this.anyRunning = true;
    this.soon(0);
    return { release, rollout };
  }

  /** Publishes a draft at once (no plan): every device of the channel gets it; unfinished rollouts of the channel end. */
  async publishNow(app: Application, releaseId: string): Promise<Release> {
    const release = await publishRelease(this.options.ctx, app, releaseId);
    await this.superseded(release);
    return release;
  }

  /** Yanks a release (docs/ota.md); its unfinished rollout ends `aborted` with it (one transaction). */
  async yank(app: Application, releaseId: string, actor: { userId: string }): Promise<Release> {
    const { release, aborted } = await yankRelease(this.options.ctx, app, releaseId, actor.userId);
    if (aborted) await this.audit(actor, 'release.rollout.abort', aborted, { reason: 'yanked' });
    return release;
  }

  /** Another release of the channel was published (with or without a rollout): its unfinished rollouts end. */
  private async superseded(release: Release): Promise<void> {
    const { ctx } = this.options;
    const ended = await ctx.repos.rollouts.supersede(release.applicationId, release.channel, isoNow(ctx.clock));
    if (ended.length > 0) this.options.logger.info({ releases: ended, by: release.id }, 'rollouts superseded');
  }

  async view(app: Application, releaseId: string): Promise<RolloutView> {
    const { repos } = this.options.ctx;
    const release = await findRelease(this.options.ctx, app, releaseId);
    const rollout = await repos.rollouts.find(release.id);
    if (!rollout)
      throw new AppError('not_found', 'The release has no rollout (it was published at once, or is a draft)');
    const [counts, history] = await Promise.all([
      repos.rollouts.waveCounts(release.id, release.sequence),
      repos.rollouts.history(release.id),
    ]);
    const sizes = cumulativeWaveSizes(rollout.plan.waves, rollout.deviceCount);
    const soak = rollout.status === 'running' ? soakEndsAt(rollout) : null;
    return {
      releaseId: release.id,
      applicationId: rollout.applicationId,
      channel: rollout.channel,
      status: rollout.status,
      currentWave: rollout.currentWave,
      deviceCount: rollout.deviceCount,
      soakSeconds: rollout.plan.soakSeconds,
      maxFailureRate: rollout.plan.maxFailureRate,
      minAttempts: rollout.plan.minAttempts,
      waves: rollout.plan.waves.map((percent, i) => {
        const c = counts.get(i) ?? { devices: 0, succeeded: 0, failed: 0 };
        const times = rollout.waveTimes[i];
        return {
          percent,
          devices: sizes[i]!,
          succeeded: c.succeeded,
          failed: c.failed,
          pending: c.devices - c.succeeded - c.failed,
          startedAt: times?.[0] ?? null,
          endedAt: times?.[1] ?? null,
        };
      }),
      pausedReason: rollout.pausedReason,
      soakEndsAt: soak === null ? null : new Date(soak).toISOString(),
      history,
      createdAt: rollout.createdAt,
      endedAt: rollout.endedAt,
    };
  }

  /**
   * An operator's move: 409 when the rollout's state does not allow it, or when the caller says
   * which wave it saw (`seen.wave`, 0-based) and the rollout is at another one now. Without it, a
   * move repeated after its answer was lost (a retried `advance`, a double click) would move the
   * rollout again from where the first left it: two waves, the second without its soak.
   */
  async operate(
    app: Application,
    releaseId: string,
    move: OperatorMove,
    actor: { userId: string },
    seen: { wave?: number | undefined } = {},
  ): Promise<void> {
    const { ctx } = this.options;
    const release = await findRelease(ctx, app, releaseId);
    const rollout = await ctx.repos.rollouts.find(release.id);
    if (!rollout)
      throw new AppError('not_found', 'The release has no rollout (it was published at once, or is a draft)');
    if (!MOVE_FROM[move].includes(rollout.status)) throw wrongState(move, rollout.status);
    if (seen.wave !== undefined && seen.wave !== rollout.currentWave) throw otherWave(move, rollout, seen.wave);
    const at = isoNow(ctx.clock);
    const event = (detail: string | null = null): RolloutEvent => ({ at, event: move, by: actor.userId, detail });
    let moved: Rollout | null;
    switch (move) {
      case 'pause':
        moved = await this.move(rollout, { status: 'paused', pausedReason: 'operator' }, event());
        break;
      case 'resume':
        moved = await this.move(
          rollout,
          {
            status: 'running',
            pausedReason: null,
            // Resuming a rollout that paused on its failures accepts them for this wave.
            acceptedWave: rollout.pausedReason === 'failure_threshold' ? rollout.currentWave : rollout.acceptedWave,
          },
          event(),
        );
        break;
      case 'advance':
        // Says which wave it started, as the coordinator's own advance does.
        moved = await this.nextWave(rollout, at, event(nextWaveDetail(rollout)));
        break;
      case 'abort':
        moved = await this.move(rollout, { status: 'aborted', pausedReason: null, endedAt: at }, event());
        break;
    }
    if (!moved) {
      const now = await ctx.repos.rollouts.find(release.id);
      // Moved meanwhile by another request or coordinator: refused as it would have been had it come after.
      if (now && MOVE_FROM[move].includes(now.status) && seen.wave !== undefined && seen.wave !== now.currentWave)
        throw otherWave(move, now, seen.wave);
      throw wrongState(move, now?.status ?? rollout.status, true);
    }
    const action: AuditAction =
      move === 'advance' && moved.status === 'completed' ? 'release.rollout.complete' : `release.rollout.${move}`;
    await this.audit(actor, action, moved, { wave: moved.currentWave + 1 });
    await this.afterMove(rollout, moved);
  }

  /** Looks at every running rollout after `delayMs`: calls in between are coalesced, the earliest wins. */
  soon(delayMs = AFTER_JOB_END_MS): void {
    if (this.stopped) return;
    const at = Date.now() + delayMs;
    if (this.soonTimer && this.soonAt <= at) return;
    clearTimeout(this.soonTimer);
    this.soonAt = at;
    this.soonTimer = setTimeout(() => {
      this.soonTimer = undefined;
      void this.tick();
    }, delayMs);
    this.soonTimer.unref();
  }
  private soonAt = 0;

  /** One look at the running rollouts; a look asked for meanwhile runs after it. */
  tick(): Promise<void> {
    if (this.stopped) return this.ticking;
    if (this.runningTick) {
      this.again = true;
      return this.ticking;
    }
    this.runningTick = true;
    this.ticking = this.lookAtRunning()
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'could not move the running rollouts'))
      .finally(() => {
        this.runningTick = false;
        if (this.again) {
          this.again = false;
          void this.tick();
        }
      });
    return this.ticking;
  }
  private runningTick = false;
  /** A rollout was running when last looked at (or was started, resumed or advanced here since). */
  private anyRunning = false;

  private async lookAtRunning(): Promise<void> {
    const { repos, clock } = this.options.ctx;
    const { rollouts: running, damaged } = await repos.rollouts.listRunning();
    // Left out, rather than stopping every running rollout at each look.
    for (const { id, column, error } of damaged) {
      this.options.logger.error(
        { err: error, releaseId: id, field: column },
        'rollout: its stored row does not parse; not moved',
      );
    }
    this.anyRunning = running.length > 0;
    for (const rollout of running) {
      const release = await repos.releases.findInApp(rollout.applicationId, rollout.releaseId);
      if (!release) continue;
      const counts = await repos.rollouts.countsOfWave(release.id, release.sequence, rollout.currentWave);
      const now = clock.now();
      const at = new Date(now).toISOString();
      const step = nextStep(rollout, counts, now);
      const wave = rollout.currentWave + 1;
      switch (step.kind) {
        case 'wait':
          break;
        case 'wave_ended': {
          const waveTimes = rollout.waveTimes.map((t, i) =>
            i === rollout.currentWave ? [t[0], at] : t,
          ) as Rollout['waveTimes'];
          const moved = await this.move(
            rollout,
            { waveTimes },
            {
              at,
              event: 'wave_end',
              by: 'system',
              detail: `wave ${wave}: every update ended (${counts.succeeded} succeeded, ${counts.failed} failed); soak of ${rollout.plan.soakSeconds} s`,
            },
          );
          if (moved) this.soon(rollout.plan.soakSeconds * 1000);
          break;
        }
        case 'pause': {
          const detail = `wave ${wave}: ${step.failed} of ${step.ended} updates failed (${percentWords(step.failed / step.ended)} > ${percentWords(rollout.plan.maxFailureRate)})`;
          const moved = await this.move(
            rollout,
            { status: 'paused', pausedReason: 'failure_threshold' },
            {
              at,
              event: 'pause',
              by: 'system',
              detail,
            },
          );
          if (moved) {
            this.options.logger.info(
              { releaseId: release.id, wave, failed: step.failed, ended: step.ended },
              'rollout paused: failure threshold',
            );
            await this.notifyPause(moved, release, step);
            await this.audit('system', 'release.rollout.pause', moved, {
              wave,
              reason: 'failure_threshold',
              failed: step.failed,
              ended: step.ended,
            });
          }
          break;
        }
        case 'advance':
        case 'complete': {
          const moved = await this.nextWave(rollout, at, {
            at,
            event: step.kind,
            by: 'system',
            detail: step.kind === 'advance' ? nextWaveDetail(rollout) : null,
          });
          if (moved) {
            await this.audit('system', `release.rollout.${step.kind}`, moved, { wave: moved.currentWave + 1 });
            await this.afterMove(rollout, moved);
          }
          break;
        }
      }
    }
  }

  /**
   * A rollout paused by its failures posts to its application's chat channel, once per wave,
   * naming the wave and the devices whose update failed.
   */
  private async notifyPause(
    rollout: Rollout,
    release: Release,
    step: { failed: number; ended: number },
  ): Promise<void> {
    const { chat, ctx } = this.options;
    const app = await ctx.repos.applications.findById(rollout.applicationId);
    if (!chat || !app?.notify) return;
    try {
      await chat.outbox.enqueue({
        orgId: rollout.orgId,
        dedupeKey: `rollout-pause:${rollout.releaseId}:${rollout.currentWave}`,
        jobId: null,
        provider: app.notify.provider,
        target: { type: 'channel', teamId: app.notify.teamId, channelId: app.notify.channelId },
        payload: {
          kind: 'rollout_paused',
          orgId: rollout.orgId,
          releaseId: release.id,
          applicationId: app.id,
          appSlug: app.slug,
          version: release.version,
          wave: rollout.currentWave + 1,
          waves: rollout.plan.waves.length,
          failed: step.failed,
          ended: step.ended,
          maxFailureRate: rollout.plan.maxFailureRate,
          failedDevices: await ctx.repos.rollouts.failedDevicesOfWave(
            release.id,
            release.sequence,
            rollout.currentWave,
            PAUSE_DEVICES_NAMED,
          ),
        },
        createdAt: isoNow(ctx.clock),
      });
      chat.queued();
    } catch (error) {
      this.options.logger.error({ err: error, releaseId: release.id }, 'could not post the pause of a rollout');
    }
  }

  /** The next wave starts now, or after the last the rollout completes (the current wave ended now if it had not). */
  private nextWave(rollout: Rollout, at: string, event: RolloutEvent): Promise<Rollout | null> {
    const waveTimes = rollout.waveTimes.map((t, i) =>
      i === rollout.currentWave ? [t[0], t[1] ?? at] : t,
    ) as Rollout['waveTimes'];
    if (rollout.currentWave >= rollout.plan.waves.length - 1) {
      return this.move(
        rollout,
        { status: 'completed', pausedReason: null, waveTimes, endedAt: at },
        { ...event, event: 'complete' },
      );
    }
    return this.move(
      rollout,
      {
        status: 'running',
        pausedReason: null,
        currentWave: rollout.currentWave + 1,
        waveTimes: [...waveTimes, [at, null]],
      },
      event,
    );
  }

  /** After a wave started, its devices are evaluated; after completion, every device of the channel. */
  private async afterMove(before: Rollout, after: Rollout): Promise<void> {
    const { ctx } = this.options;
    if (after.status === 'completed') {
      // The devices of its waves have it already; those bound since the publish get it now.
      await ctx.ota.evaluateIds(await ctx.repos.rollouts.boundSince(after.releaseId), 'publish');
    } else if (after.currentWave > before.currentWave) {
      await ctx.ota.evaluateIds(await ctx.repos.rollouts.bindingsOfWave(after.releaseId, after.currentWave), 'publish');
    }
    if (after.status === 'running') {
      this.anyRunning = true;
      this.soon(0);
    }
  }

  private move(rollout: Rollout, to: RolloutMove['to'], event: RolloutEvent): Promise<Rollout | null> {
    return this.options.ctx.repos.rollouts.move(rollout.releaseId, {
      from: { status: rollout.status, currentWave: rollout.currentWave },
      to,
      event,
    });
  }

  private async audit(
    actor: RolloutActor,
    action: AuditAction,
    rollout: Rollout,
    metadata: Record<string, unknown>,
  ): Promise<void> {
    await this.options.audit.record({
      orgId: rollout.orgId,
      actorType: actor === 'system' ? 'system' : 'user',
      actorId: actor === 'system' ? null : actor.userId,
      action,
      targetType: 'release',
      targetId: rollout.releaseId,
      metadata: { applicationId: rollout.applicationId, channel: rollout.channel, status: rollout.status, ...metadata },
    });
  }
}

/** The failed devices a pause's message names (the others are counted). */
const PAUSE_DEVICES_NAMED = 10;

/**
 * A move to the next wave in its history entry's words (waves are said from 1): the wave it starts,
 * or, from the last wave, that the rollout completed after it.
 */
function nextWaveDetail(rollout: Rollout): string {
  const waves = rollout.plan.waves.length;
  const next = rollout.currentWave + 2;
  return next <= waves ? `wave ${next} of ${waves}` : `after wave ${waves} of ${waves}, the last`;
}

/** The caller saw the rollout at wave `seen` (0-based); it is at another now (waves are said from 1). */
function otherWave(move: OperatorMove, rollout: Rollout, seen: number): AppError {
  return new AppError(
    'conflict',
    `The rollout is at wave ${rollout.currentWave + 1} of ${rollout.plan.waves.length} now, not wave ${seen + 1}: read it again before you ${move} it`,
    { details: { currentWave: rollout.currentWave, status: rollout.status } },
  );
}

function wrongState(move: OperatorMove, status: RolloutStatus, changed = false): AppError {
  return new AppError(
    'conflict',
    `Cannot ${move} a rollout that is ${status}${changed ? ' (it changed meanwhile)' : ''}; ${move} applies to a rollout that is ${MOVE_FROM[move].join(' or ')}`,
    { details: { status } },
  );
}
