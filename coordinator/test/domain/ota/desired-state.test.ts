import { describe, expect, it } from 'vitest';
import { desiredState, forceReasonText, runsRelease } from '../../../src/domain/ota/desired-state.js';
import type { Installation } from '../../../src/domain/model/device-bindings.js';
import type { ReleaseFacts } from '../../../src/domain/model/releases.js';

let nextSequence = 1;
function release(overrides: Partial<ReleaseFacts> = {}): ReleaseFacts {
  const sequence = overrides.sequence ?? nextSequence++;
  return {
    id: `r${sequence}`,
    version: `1.${sequence}`,
    sequence,
    channel: 'stable',
    status: 'published',
    updatePolicy: 'optional',
    ...overrides,
  };
}
const at = (r: ReleaseFacts): Installation => ({ releaseId: r.id, version: r.version, sequence: r.sequence });

describe('desired state (CONTRACT §7)', () => {
  it('desires the published release of the channel with the highest sequence, whatever the list order', () => {
    const r1 = release({ sequence: 1, version: '9.0' });
    const r3 = release({ sequence: 3, version: '1.0' });
    const r2 = release({ sequence: 2 });
    const state = desiredState({ channel: 'stable', releases: [r1, r3, r2], current: null });
    expect(state.desired).toBe(r3);
  });

  it('ignores drafts, yanked releases and other channels', () => {
    const r1 = release({ sequence: 1 });
    const releases = [
      r1,
      release({ sequence: 2, status: 'draft' }),
      release({ sequence: 3, status: 'yanked' }),
      release({ sequence: 4, channel: 'beta' }),
    ];
    expect(desiredState({ channel: 'stable', releases, current: null }).desired).toBe(r1);
    expect(desiredState({ channel: 'beta', releases, current: null }).desired?.sequence).toBe(4);
  });

  it('has desired null, minimum 0 and "" and no force when the channel has no published release', () => {
    const state = desiredState({
      channel: 'stable',
      releases: [release({ status: 'draft' }), release({ channel: 'beta', updatePolicy: 'mandatory' })],
      current: null,
    });
    expect(state).toEqual({ desired: null, minSequence: 0, minVersion: '', forced: false, forceReason: null });
  });

  it('leaves out a release its staged rollout withholds from the device, unless the device already runs it', () => {
    const r1 = release({ sequence: 1 });
    const r2 = release({ sequence: 2 });
    const withheld = new Set([r2.id]);
    expect(desiredState({ channel: 'stable', releases: [r1, r2], current: at(r1), withheld }).desired).toBe(r1);
    // Bound again after the waves (its labels left the device group and came back): it keeps r2.
    const kept = desiredState({ channel: 'stable', releases: [r1, r2], current: at(r2), withheld });
    expect(kept.desired).toBe(r2);
    expect(kept.forced).toBe(false);
    const byVersion = { releaseId: null, version: r2.version, sequence: r2.sequence };
    expect(desiredState({ channel: 'stable', releases: [r1, r2], current: byVersion, withheld }).desired).toBe(r2);
  });

  it('takes min_sequence and min_version from the highest mandatory release, not the highest release', () => {
    const releases = [
      release({ sequence: 1, version: '1.0', updatePolicy: 'mandatory' }),
      release({ sequence: 2, version: '2.0', updatePolicy: 'mandatory' }),
      release({ sequence: 3, version: '3.0' }),
    ];
    const state = desiredState({ channel: 'stable', releases, current: null });
    expect(state.desired?.version).toBe('3.0');
    expect([state.minSequence, state.minVersion]).toEqual([2, '2.0']);
  });

  it('does not take a yanked mandatory release as the minimum', () => {
    const releases = [
      release({ sequence: 1, version: '1.0', updatePolicy: 'mandatory' }),
      release({ sequence: 2, version: '2.0', updatePolicy: 'mandatory', status: 'yanked' }),
    ];
    const state = desiredState({ channel: 'stable', releases, current: null });
    expect([state.minSequence, state.minVersion]).toEqual([1, '1.0']);
  });

  it('forces a device whose current sequence is below the minimum', () => {
    const r1 = release({ sequence: 1 });
    const r2 = release({ sequence: 2, updatePolicy: 'mandatory', version: '2.0' });
    const r3 = release({ sequence: 3 });
    const releases = [r1, r2, r3];
    const below = desiredState({ channel: 'stable', releases, current: at(r1) });
    expect([below.forced, below.forceReason]).toEqual([true, 'below_minimum']);
    expect(forceReasonText(below)).toContain('2.0 (sequence 2)');
    expect(desiredState({ channel: 'stable', releases, current: at(r2) }).forced).toBe(false);
    expect(desiredState({ channel: 'stable', releases, current: at(r3) }).forced).toBe(false);
  });

  it('does not force a device below the highest release when no release is mandatory (optional updates)', () => {
    const r1 = release({ sequence: 1 });
    const state = desiredState({ channel: 'stable', releases: [r1, release({ sequence: 2 })], current: at(r1) });
    expect(state.desired?.sequence).toBe(2);
    expect(state.forced).toBe(false);
  });

  it('counts a device with nothing observed as sequence 0: below any mandatory release', () => {
    const releases = [release({ sequence: 1, updatePolicy: 'mandatory' })];
    expect(desiredState({ channel: 'stable', releases, current: null }).forced).toBe(true);
    const onlyOptional = [release({ sequence: 1 })];
    expect(desiredState({ channel: 'stable', releases: onlyOptional, current: null }).forced).toBe(false);
  });

  it('forces a device whose current release was yanked, and desires the previous published one (downgrade)', () => {
    const r1 = release({ sequence: 1 });
    const r2 = release({ sequence: 2, status: 'yanked' });
    const state = desiredState({ channel: 'stable', releases: [r1, r2], current: at(r2) });
    expect(state.desired).toBe(r1);
    expect([state.forced, state.forceReason]).toEqual([true, 'current_yanked']);
    expect(forceReasonText(state)).toBe('the installed release was yanked');
  });

  it('sees a yanked current release of another channel, or one given by status only', () => {
    const beta = release({ sequence: 5, channel: 'beta', status: 'yanked' });
    const r1 = release({ sequence: 1 });
    expect(desiredState({ channel: 'stable', releases: [r1, beta], current: at(beta) }).forced).toBe(true);
    const byStatus = desiredState({
      channel: 'stable',
      releases: [r1],
      current: { releaseId: 'elsewhere', version: 'x', sequence: 9 },
      currentReleaseStatus: 'yanked',
    });
    expect(byStatus.forceReason).toBe('current_yanked');
  });

  it('forces even when the channel has no desired release left after a yank', () => {
    const only = release({ sequence: 1, status: 'yanked' });
    const state = desiredState({ channel: 'stable', releases: [only], current: at(only) });
    expect(state.desired).toBeNull();
    expect(state.forced).toBe(true);
  });

  it('does not force a device above the minimum that runs a release unknown by id', () => {
    const releases = [release({ sequence: 2, updatePolicy: 'mandatory' })];
    const current = { releaseId: null, version: '7', sequence: 7 };
    expect(desiredState({ channel: 'stable', releases, current }).forced).toBe(false);
  });
});

describe('runsRelease', () => {
  it('compares release ids, or sequences when the device reported no id', () => {
    const r = release({ sequence: 4 });
    expect(runsRelease(null, r)).toBe(false);
    expect(runsRelease(at(r), r)).toBe(true);
    expect(runsRelease({ releaseId: 'other', version: r.version, sequence: 4 }, r)).toBe(false);
    expect(runsRelease({ releaseId: null, version: '', sequence: 4 }, r)).toBe(true);
    expect(runsRelease({ releaseId: null, version: '', sequence: 3 }, r)).toBe(false);
  });
});
