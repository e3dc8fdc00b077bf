import type { Schema } from '@drover/shared/api';
import { counted } from '@drover/shared/counted';

// The types of ./ota.ts, named from the schema so that this module imports nothing of the
// dashboard's (its tests load it alone).
type Release = Schema<'Release'>;
type Binding = Schema<'DeviceBinding'>;
type ReleaseRef = NonNullable<Binding['current']>;

/**
 * What a publish or a yank will do to the devices of an application, computed from its releases
 * and device bindings with the coordinator's rules (docs/ota.md "Desired state"): a device on
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
  back: Binding[];
  /** Other devices whose next release changes. */
  others: Binding[];
}

export interface Impact {
  /** One sentence per consequence, for the confirmation. */
  lines: string[];
  /** How many devices will get an update job. */
  devices: number;
}

/** What publishing the draft `release` will do. */
export function publishImpact(releases: readonly Release[], bindings: readonly Binding[], release: Release): Impact {
  const after = releases.map((r) => (r.id === release.id ? { ...r, status: 'published' as const } : r));
  const desired = desiredOf(after, release.channel);
  const onChannel = bindings.filter((b) => b.channel === release.channel);
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
  const moving = onChannel.filter((b) => !runs(b.current, release));
  const lines = [
    `${counted(moving.length, 'device')} on channel ${release.channel} will be told to update to ${release.version}.`,
  ];
  const already = onChannel.length - moving.length;
  if (already > 0)
    lines.push(`${counted(already, 'device')} on the channel already ${already === 1 ? 'runs' : 'run'} it.`);
  if (release.updatePolicy === 'mandatory' && moving.length > 0) {
    lines.push('It is mandatory: devices below it must install it, even where they postpone optional updates.');
  }
  return { devices: moving.length, lines };
}

/**
 * What yanking `release` (a draft or a published one) will do. `keyed`: the application has
 * release keys, and its devices never go back to a lower signed sequence (docs/ota.md).
 */
export function yankImpact(
  releases: readonly Release[],
  bindings: readonly Binding[],
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
  const stranded: Binding[] = [];
  // Devices that were to update to the release (their desired one, an update job under way or
  // waiting for a window) and already run the release the channel goes back to: they stay.
  const staying = new Map<string, { on: Release; devices: Binding[] }>();
  for (const b of bindings) {
    const onIt = runs(b.current, release);
    if (b.channel !== release.channel && !onIt) continue;
    const before = desiredOf(releases, b.channel);
    const next = desiredOf(after, b.channel);
    if (!next) {
      if (onIt) stranded.push(b);
      continue;
    }
    if (runs(b.current, next)) {
      if (!onIt && b.desired?.releaseId === release.id) {
        const stay = staying.get(next.id) ?? { on: next, devices: [] };
        stay.devices.push(b);
        staying.set(next.id, stay);
      }
      continue;
    }
    if (!onIt && before?.id === next.id) continue;
    const move = moves.get(next.id) ?? { to: next, back: [], others: [] };
    (onIt ? move.back : move.others).push(b);
    moves.set(next.id, move);
  }
  const lines: string[] = [];
  let devices = 0;
  for (const m of moves.values()) {
    devices += m.back.length + m.others.length;
    if (m.back.length > 0) {
      lines.push(
        keyed
          ? `Yanking ${release.version}: ${counted(m.back.length, 'device')} on it will refuse ${m.to.version}: ` +
              'this application has release keys, and its devices never go back to a lower signed sequence. ' +
              `To roll them back, publish the artifact of ${m.to.version} signed again as a new release.`
          : `Yanking ${release.version}: ${counted(m.back.length, 'device')} on it will be moved back to ${m.to.version}.`,
      );
    }
    if (m.others.length > 0) {
      lines.push(
        `${counted(m.others.length, 'device')} that ${m.others.length === 1 ? 'was' : 'were'} to update to ${release.version} ` +
          `will be told to install ${m.to.version} instead.`,
      );
    }
  }
  if (stranded.length > 0) {
    lines.push(
      `${counted(stranded.length, 'device')} on ${release.version} will keep it: ` +
        `no other release is published on ${stranded.length === 1 ? 'its channel' : 'their channels'}.`,
    );
  }
  for (const stay of staying.values()) {
    const n = stay.devices.length;
    const underWay = stay.devices.filter((b) => b.activeJobId !== null).length;
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
  return { devices, lines };
}

/** Per release: devices that run it, are updating to it, or failed to install it. */
export interface ReleaseCounts {
  on: number;
  updating: number;
  failed: number;
}

export function releaseCounts(bindings: readonly Binding[], release: Release): ReleaseCounts {
  const counts = { on: 0, updating: 0, failed: 0 };
  for (const b of bindings) {
    if (runs(b.current, release)) counts.on += 1;
    const toIt = b.desired?.releaseId === release.id && !runs(b.current, release);
    if (toIt && b.activeJobId !== null) counts.updating += 1;
    else if (toIt && (b.state === 'failed' || b.state === 'refused')) counts.failed += 1;
  }
  return counts;
}
