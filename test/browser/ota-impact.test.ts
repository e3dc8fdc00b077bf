import { describe, expect, it } from 'vitest';
import type { Schema } from '@drover/shared/api';
import { yankImpact } from '../../dashboard/src/api/ota-impact.js';
import { counted } from '@drover/shared/counted';

type Release = Schema<'Release'>;
type DeviceCount = Schema<'DeviceCount'>;

/** The yank confirmation of an application's page (dashboard/src/api/ota-impact.ts, docs/dashboard.md). */
describe('yankImpact', () => {
  const release = (id: string, version: string, sequence: number): Release =>
    ({ id, version, sequence, channel: 'stable', status: 'published', updatePolicy: 'optional' }) as Release;
  const ref = (r: Release) => ({ releaseId: r.id, version: r.version, sequence: r.sequence });
  const old = release('r4', '4.0.0', 4);
  const bad = release('r5', '5.0.0', 5);
  /** One device (a count of 1), updating when it has an update job under way. */
  const device = (current: Release, desired: Release, updating = false): DeviceCount => ({
    channel: 'stable',
    origin: 'manual',
    current: ref(current),
    desiredReleaseId: desired.id,
    updating,
    state: null,
    devices: 1,
  });

  it('counts a group of many devices as many', () => {
    const group = { ...device(bad, bad), devices: 1200 };
    expect(yankImpact([old, bad], [group], bad).lines).toEqual([
      'Yanking 5.0.0: 1,200 devices on it will be moved back to 4.0.0.',
    ]);
  });

  it('says which devices were to update to the release and stay on the one they run', () => {
    // Held for a maintenance window: no job yet.
    const waiting = yankImpact([old, bad], [device(old, bad), device(old, bad)], bad);
    expect(waiting.lines).toEqual(['2 devices that were to update to 5.0.0 will stay on 4.0.0.']);
    // Mid-update: a job the agent took runs to its end, and installs the release it goes back from.
    const updating = yankImpact([old, bad], [device(old, bad, true), device(bad, bad)], bad);
    expect(updating.lines).toEqual([
      'Yanking 5.0.0: 1 device on it will be moved back to 4.0.0.',
      '1 device that was to update to 5.0.0 will stay on 4.0.0.',
      'It has an update job under way: a job its agent has taken runs to its end, and a device that installs 5.0.0 is then moved back to 4.0.0.',
    ]);
  });

  it('still says so when no device runs the release or is to install it', () => {
    const elsewhere = { ...device(old, old), channel: 'beta' };
    expect(yankImpact([old, bad], [device(old, old), elsewhere], bad).lines).toEqual([
      'Yanking 5.0.0: no device runs it or is to install it.',
    ]);
  });
});

describe('counted', () => {
  it('gives a count with its noun, plural unless it is one, grouped by thousands', () => {
    expect(counted(1, 'device')).toBe('1 device');
    expect(counted(0, 'device')).toBe('0 devices');
    expect(counted(12_000, 'job')).toBe('12,000 jobs');
    expect(counted(2, 'batch', 'batches')).toBe('2 batches');
  });
});
