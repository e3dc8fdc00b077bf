import { createHash } from 'node:crypto';
import type { RolloutPlan, RolloutState, WaveCounts } from '../model/rollouts.js';
import { validationFailed, type AppError } from '../../errors.js';

/**
 * Staged rollouts (docs/ota.md, "Staged rollouts"), as pure rules: the plan's checks, which wave
 * holds each device, and what a running rollout does next.
 */

export const MAX_WAVES = 20;
/** A week: longer soaks are a plan that should be paused by hand instead. */
export const MAX_SOAK_SECONDS = 7 * 24 * 3600;
export const MAX_MIN_ATTEMPTS = 100_000;

/** The plan of a publish body, checked: a 422 naming every field that is wrong. */
export function checkRolloutPlan(input: {
  waves: number[];
  soakSeconds: number;
  maxFailureRate: number;
  minAttempts?: number | undefined;
}): RolloutPlan | AppError {
  const problems: { path: string; message: string }[] = [];
  const at = (field: string) => `body.rollout.${field}`;
  const { waves } = input;
  if (waves.length === 0)
    problems.push({ path: at('waves'), message: 'expected at least one wave, got an empty list' });
  else if (waves.length > MAX_WAVES) {
    problems.push({ path: at('waves'), message: `expected at most ${MAX_WAVES} waves, got ${waves.length}` });
  } else {
    waves.forEach((p, i) => {
      if (!Number.isFinite(p) || p <= 0 || p > 100) {
        problems.push({
          path: `${at('waves')}.${i}`,
          message: `expected a percentage above 0 and at most 100, got ${p}`,
        });
      } else if (i > 0 && p <= waves[i - 1]!) {
        problems.push({
          path: `${at('waves')}.${i}`,
          message: `expected waves in increasing order, got ${p} after ${waves[i - 1]}`,
        });
      }
    });
    if (waves[waves.length - 1] !== 100) {
      problems.push({
        path: at('waves'),
        message: `expected the last wave to be 100 (every device), got ${waves[waves.length - 1]}`,
      });
    }
  }
  if (!Number.isInteger(input.soakSeconds) || input.soakSeconds < 0 || input.soakSeconds > MAX_SOAK_SECONDS) {
    problems.push({
      path: at('soakSeconds'),
      message: `expected a whole number of seconds from 0 to ${MAX_SOAK_SECONDS}, got ${input.soakSeconds}`,
    });
  }
  if (!Number.isFinite(input.maxFailureRate) || input.maxFailureRate < 0 || input.maxFailureRate > 1) {
    problems.push({ path: at('maxFailureRate'), message: `expected a rate from 0 to 1, got ${input.maxFailureRate}` });
  }
  const minAttempts = input.minAttempts ?? 1;
  if (!Number.isInteger(minAttempts) || minAttempts < 1 || minAttempts > MAX_MIN_ATTEMPTS) {
    problems.push({
      path: at('minAttempts'),
      message: `expected a whole number from 1 to ${MAX_MIN_ATTEMPTS}, got ${minAttempts}`,
    });
  }
  if (problems.length > 0) return validationFailed(problems);
  return { waves: [...waves], soakSeconds: input.soakSeconds, maxFailureRate: input.maxFailureRate, minAttempts };
}

/**
 * How many devices the waves hold, each counting the ones before it: `ceil(p x devices / 100)`,
 * at least 1 (when there are devices).
 */
export function cumulativeWaveSizes(waves: readonly number[], devices: number): number[] {
  if (devices === 0) return waves.map(() => 0);
  return waves.map((p) => Math.min(devices, Math.max(1, Math.ceil((p * devices) / 100 - 1e-9))));
}

/**
 * Which wave first holds each device: the devices in a stable order, the hash of (binding id,
 * release id), so that a device's place does not depend on when it was bound or on the order the
 * database gives, and differs from one release to the next (the same devices are not always first).
 */
export function assignWaves(
  bindingIds: readonly string[],
  releaseId: string,
  waves: readonly number[],
): { bindingId: string; wave: number }[] {
  const ordered = bindingIds
    .map((bindingId) => ({
      bindingId,
      key: createHash('sha256').update(`${bindingId}\u0000${releaseId}`).digest('hex'),
    }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const sizes = cumulativeWaveSizes(waves, ordered.length);
  let wave = 0;
  return ordered.map(({ bindingId }, i) => {
    while (i >= sizes[wave]!) wave++;
    return { bindingId, wave };
  });
}

/** What a running rollout does next, from its current wave's counts (`counts`) at `now` (Unix ms). */
export type RolloutStep =
  | { kind: 'wait' }
  /** The wave's last update ended: its soak starts now. */
  | { kind: 'wave_ended' }
  | { kind: 'pause'; failed: number; ended: number }
  | { kind: 'advance' }
  | { kind: 'complete' };

/**
 * The rules of a running rollout. The failure rate of the current wave (failed ÷ ended, of the
 * devices new in it) is judged as soon as `minAttempts` of them ended, and whenever it is strictly
 * above `maxFailureRate` the rollout pauses, before the next wave (unless an operator resumed it
 * in this wave, accepting its failures). When every device of the wave ended (succeeded or
 * failed), the soak starts; when it is over, the next wave starts. When every device of the
 * last wave ended, the rollout completes.
 */
export function nextStep(r: RolloutState, counts: WaveCounts, now: number): RolloutStep {
  if (r.status !== 'running') return { kind: 'wait' };
  const ended = counts.succeeded + counts.failed;
  if (
    r.currentWave > r.acceptedWave &&
    ended >= r.plan.minAttempts &&
    ended > 0 &&
    counts.failed / ended > r.plan.maxFailureRate
  ) {
    return { kind: 'pause', failed: counts.failed, ended };
  }
  if (ended < counts.devices) return { kind: 'wait' };
  // The soak protects the next wave: after the last one there is none to protect.
  if (r.currentWave >= r.plan.waves.length - 1) return { kind: 'complete' };
  const endedAt = r.waveTimes[r.currentWave]?.[1] ?? null;
  if (endedAt === null) return { kind: 'wave_ended' };
  if (now < Date.parse(endedAt) + r.plan.soakSeconds * 1000) return { kind: 'wait' };
  return { kind: 'advance' };
}

/** When the current wave's soak ends (Unix ms), or null when its updates have not all ended. */
export function soakEndsAt(r: RolloutState): number | null {
  const endedAt = r.waveTimes[r.currentWave]?.[1] ?? null;
  return endedAt === null ? null : Date.parse(endedAt) + r.plan.soakSeconds * 1000;
}
