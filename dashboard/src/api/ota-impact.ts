import type { Schema } from '@drover/shared/api';
import { counted } from '@drover/shared/counted';

// The types of ./ota.ts, named from the schema so that this module imports nothing of the
// dashboard's (its tests load it alone).
type Release = Schema<'Release'>;
type DeviceCount = Schema<'DeviceCount'>;
type ReleaseRef = NonNullable<DeviceCount['current']>;

/**
 * What a publish or a yank will do to the devices of an application, computed from its releases
 * and its devices as the coordinator counts them (`device-counts`: a few groups of alike devices,
 * however many there are) with the coordinator's rules (docs/ota.md "Desired state"): a device on
 * channel C should run the published release of C with the highest sequence, and is moved when
 * it runs something else.
 */

/** The published release of `channel` with the highest sequence, or null. */
export function desiredOf(releases: readonly Release[], channel: string): Release | null {
  let desired: Release | null = null;
  for (const r of releases) {
    if (r.status === 'published' && r.channel === channel && (!desired || r.sequence > desired.sequence)) desired = r;
  }
  return desired;
}

/** The device runs `release`: the same id, or the same sequence when it reported no id. */
export function runs(current: ReleaseRef | null, release: Pick<Release, 'id' | 'sequence'>): boolean {
  if (!current) return false;
  return current.releaseId !== null ? current.releaseId === release.id : current.sequence === release.sequence;
}

/** Devices grouped by the release they will be told to install. */
export interface Move {
  to: Release;
  /** Devices that run the release being yanked. */
  back: number;
  /** Other devices whose next release changes. */
  others: number;
}

const total = (groups: readonly DeviceCount[]): number => groups.reduce((sum, g) => sum + g.devices, 0);

export interface Impact {
  /** One sentence per consequence, for the confirmation. */
  lines: string[];
  /** How many devices will get an update job. */
  devices: number;
}

/** What publishing the draft `release` will do. */
export function publishImpact(releases: readonly Release[], devices: readonly DeviceCount[], release: Release): Impact {
  const after = releases.map((r) => (r.id === release.id ? { ...r, status: 'published' as const } : r));
  const desired = desiredOf(after, release.channel);
  const onChannel = devices.filter((g) => g.channel === release.channel);
  if (desired?.id !== release.id) {
    return {
      devices: 0,
      lines: [
        `${release.version} (sequence ${release.sequence}) is older than ${desired?.version ?? 'the latest release'} ` +
          `(sequence ${desired?.sequence ?? '?'}), already published on channel ${release.channel}: ` +
          'no device will be told to install it.',
      ],
    };
  }
  const moving = total(onChannel.filter((g) => !runs(g.current, release)));
  const lines = [
    `${counted(moving, 'device')} on channel ${release.channel} will be told to update to ${release.version}.`,
  ];
  const already = total(onChannel) - moving;
  if (already > 0)
    lines.push(`${counted(already, 'device')} on the channel already ${already === 1 ? 'runs' : 'run'} it.`);
  if (release.updatePolicy === 'mandatory' && moving > 0) {
    lines.push('It is mandatory: devices below it must install it, even where they postpone optional updates.');
  }
  return { devices: moving, lines };
}

/**
 * What yanking `release` (a draft or a published one) will do. `keyed`: the application has
 * release keys, and its devices never go back to a lower signed sequence (docs/ota.md).
 */
export function yankImpact(
  releases: readonly Release[],
  devices: readonly DeviceCount[],
  release: Release,
  keyed = false,
): Impact {
  if (release.status === 'draft') {
    return {
      devices: 0,
      lines: [`Withdrawing the draft ${release.version}: no device changes, and its artifact can be deleted.`],
    };
  }
  const after = releases.map((r) => (r.id === release.id ? { ...r, status: 'yanked' as const } : r));
  const moves = new Map<string, Move>();
  let stranded = 0;
  // Devices that were to update to the release (their desired one, an update job under way or
  // waiting for a window) and already run the release the channel goes back to: they stay.
  const staying = new Map<string, { on: Release; devices: number; underWay: number }>();
  for (const g of devices) {
    const onIt = runs(g.current, release);
    if (g.channel !== release.channel && !onIt) continue;
    const before = desiredOf(releases, g.channel);
    const next = desiredOf(after, g.channel);
    if (!next) {
      if (onIt) stranded += g.devices;
      continue;
    }
    if (runs(g.current, next)) {
      if (!onIt && g.desiredReleaseId === release.id) {
        const stay = staying.get(next.id) ?? { on: next, devices: 0, underWay: 0 };
        stay.devices += g.devices;
        if (g.updating) stay.underWay += g.devices;
        staying.set(next.id, stay);
      }
      continue;
    }
    if (!onIt && before?.id === next.id) continue;
    const move = moves.get(next.id) ?? { to: next, back: 0, others: 0 };
    if (onIt) move.back += g.devices;
    else move.others += g.devices;
    moves.set(next.id, move);
  }
  const lines: string[] = [];
  let moved = 0;
  for (const m of moves.values()) {
    moved += m.back + m.others;
    if (m.back > 0) {
      lines.push(
        keyed
          ? `Yanking ${release.version}: ${counted(m.back, 'device')} on it will refuse ${m.to.version}: ` +
              'this application has release keys, and its devices never go back to a lower signed sequence. ' +
              `To roll them back, publish the artifact of ${m.to.version} signed again as a new release.`
          : `Yanking ${release.version}: ${counted(m.back, 'device')} on it will be moved back to ${m.to.version}.`,
      );
    }
    if (m.others > 0) {
      lines.push(
        `${counted(m.others, 'device')} that ${m.others === 1 ? 'was' : 'were'} to update to ${release.version} ` +
          `will be told to install ${m.to.version} instead.`,
      );
    }
  }
  if (stranded > 0) {
    lines.push(
      `${counted(stranded, 'device')} on ${release.version} will keep it: ` +
        `no other release is published on ${stranded === 1 ? 'its channel' : 'their channels'}.`,
    );
  }
  for (const stay of staying.values()) {
    const n = stay.devices;
    const underWay = stay.underWay;
    lines.push(
      `${counted(n, 'device')} that ${n === 1 ? 'was' : 'were'} to update to ${release.version} will stay on ${stay.on.version}.`,
    );
    if (underWay > 0) {
      const whose = n === 1 ? 'It has' : underWay === 1 ? '1 of them has' : `${underWay} of them have`;
      lines.push(
        `${whose} an update job under way: a job its agent has taken runs to its end, and a device that installs ` +
          (keyed
            ? `${release.version} then keeps it (under release keys, devices never go back to a lower signed sequence).`
            : `${release.version} is then moved back to ${stay.on.version}.`),
      );
    }
  }
  if (lines.length === 0) lines.push(`Yanking ${release.version}: no device runs it or is to install it.`);
  return { devices: moved, lines };
}

/** Per release: devices that run it, are updating to it, or failed to install it. */
export interface ReleaseCounts {
  on: number;
  updating: number;
  failed: number;
}

export function releaseCounts(devices: readonly DeviceCount[], release: Release): ReleaseCounts {
  const counts = { on: 0, updating: 0, failed: 0 };
  for (const g of devices) {
    if (runs(g.current, release)) counts.on += g.devices;
    const toIt = g.desiredReleaseId === release.id && !runs(g.current, release);
    if (toIt && g.updating) counts.updating += g.devices;
    else if (toIt && (g.state === 'failed' || g.state === 'refused')) counts.failed += g.devices;
  }
  return counts;
}
