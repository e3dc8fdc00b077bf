import { describe, expect, it } from 'vitest';
import type { RolloutState } from '../../../src/domain/model/rollouts.js';
import { AppError } from '../../../src/errors.js';
import { assignWaves, checkRolloutPlan, cumulativeWaveSizes, nextStep } from '../../../src/domain/ota/rollout-rules.js';

const plan = { waves: [1, 10, 50, 100], soakSeconds: 60, maxFailureRate: 0.05, minAttempts: 1 };
const T0 = Date.parse('2030-01-01T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const state = (over: Partial<RolloutState> = {}): RolloutState => ({
  status: 'running',
  plan,
  currentWave: 0,
  acceptedWave: -1,
  waveTimes: [[iso(T0), null]],
  ...over,
});

describe('rollout plans', () => {
  it('refuses waves not increasing, not ending at 100, empty; a rate outside [0, 1]; a negative soak; naming each field', () => {
    const paths = (input: Parameters<typeof checkRolloutPlan>[0]) => {
      const r = checkRolloutPlan(input);
      return r instanceof AppError ? (r.details as { path: string }[]).map((d) => d.path) : [];
    };
    expect(paths({ waves: [], soakSeconds: 0, maxFailureRate: 0 })).toEqual(['body.rollout.waves']);
    expect(paths({ waves: [10, 5, 100], soakSeconds: 0, maxFailureRate: 0 })).toEqual(['body.rollout.waves.1']);
    expect(paths({ waves: [10, 50], soakSeconds: 0, maxFailureRate: 0 })).toEqual(['body.rollout.waves']);
    expect(paths({ waves: [0, 100], soakSeconds: 0, maxFailureRate: 0 })).toEqual(['body.rollout.waves.0']);
    expect(paths({ waves: [100], soakSeconds: -1, maxFailureRate: 1.5, minAttempts: 0 })).toEqual([
      'body.rollout.soakSeconds',
      'body.rollout.maxFailureRate',
      'body.rollout.minAttempts',
    ]);
    expect(checkRolloutPlan({ waves: [1, 100], soakSeconds: 0, maxFailureRate: 0 })).toEqual({
      waves: [1, 100],
      soakSeconds: 0,
      maxFailureRate: 0,
      minAttempts: 1,
    });
  });
});

describe('waves', () => {
  it('hold ceil(p x devices / 100) devices, at least one', () => {
    expect(cumulativeWaveSizes([1, 10, 50, 100], 10_000)).toEqual([100, 1000, 5000, 10_000]);
    expect(cumulativeWaveSizes([1, 10, 50, 100], 7)).toEqual([1, 1, 4, 7]);
    expect(cumulativeWaveSizes([1, 100], 0)).toEqual([0, 0]);
  });

  it('give each device a wave in an order stable for a release and different from one release to the next', () => {
    const ids = Array.from({ length: 200 }, (_, i) => `binding-${i}`);
    const first = assignWaves(ids, 'release-1', [1, 10, 100]);
    expect(assignWaves([...ids].reverse(), 'release-1', [1, 10, 100])).toEqual(first);
    const counts = [0, 1, 2].map((w) => first.filter((d) => d.wave === w).length);
    expect(counts).toEqual([2, 18, 180]);
    const other = assignWaves(ids, 'release-2', [1, 10, 100]);
    expect(other.filter((d) => d.wave === 0).map((d) => d.bindingId)).not.toEqual(
      first.filter((d) => d.wave === 0).map((d) => d.bindingId),
    );
  });
});

describe('a running rollout', () => {
  const counts = (devices: number, succeeded: number, failed: number) => ({ devices, succeeded, failed });

  it('pauses when the failure rate of its wave is strictly above the threshold, once minAttempts ended', () => {
    expect(nextStep(state(), counts(20, 19, 1), T0)).toEqual({ kind: 'wave_ended' }); // 5 %: not above
    expect(nextStep(state(), counts(20, 9, 1), T0)).toEqual({ kind: 'pause', failed: 1, ended: 10 });
    const patient = state({ plan: { ...plan, minAttempts: 11 } });
    expect(nextStep(patient, counts(20, 9, 1), T0)).toEqual({ kind: 'wait' });
    // An operator resumed it in this wave: its failures are accepted.
    expect(nextStep(state({ acceptedWave: 0 }), counts(20, 9, 1), T0)).toEqual({ kind: 'wait' });
  });

  it('soaks after the last update of its wave ended, then starts the next wave; completes when the last wave ended', () => {
    const ended = state({ waveTimes: [[iso(T0), iso(T0 + 1000)]] });
    expect(nextStep(ended, counts(2, 2, 0), T0 + 1000 + 59_999)).toEqual({ kind: 'wait' });
    expect(nextStep(ended, counts(2, 2, 0), T0 + 1000 + 60_000)).toEqual({ kind: 'advance' });
    const last = state({ currentWave: 3, waveTimes: [0, 1, 2, 3].map(() => [iso(T0), null]) });
    expect(nextStep(last, counts(5, 4, 0), T0)).toEqual({ kind: 'wait' });
    expect(nextStep(last, counts(5, 5, 0), T0)).toEqual({ kind: 'complete' });
    // A wave with no new device ends at once.
    expect(nextStep(state(), counts(0, 0, 0), T0)).toEqual({ kind: 'wave_ended' });
    expect(nextStep(state({ status: 'paused' }), counts(2, 2, 0), T0)).toEqual({ kind: 'wait' });
  });
});
