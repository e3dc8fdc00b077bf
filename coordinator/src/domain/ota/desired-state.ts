import type { DesiredState, ForceReason, Installation } from '../model/device-bindings.js';
import type { ReleaseFacts, ReleaseStatus } from '../model/releases.js';

/**
 * The desired state of a device binding (docs/ota.md), as a pure function of the
 * application's releases and the device's observed installation. Everything that answers
 * "what should this device run" (evaluations, the dashboard, the signed manifest) calls it.
 */

export interface DesiredStateInput<R extends ReleaseFacts> {
  /** The binding's channel. */
  channel: string;
  /**
   * Releases of the application: any channel and status (the function keeps the published ones
   * of `channel`). The current release must be among them for a yank to be seen, unless
   * `currentReleaseStatus` is given.
   */
  releases: readonly R[];
  /** The observed installation; null when nothing was observed (counts as sequence 0). */
  current: Installation | null;
  /** The status of the current release when it is not in `releases`. */
  currentReleaseStatus?: ReleaseStatus | null;
  /**
   * Releases that do not count for this device yet: their staged rollout has not reached it
   * (docs/ota.md, "Staged rollouts"). They are neither desired nor a minimum for it, unless the
   * device already runs one: a binding made again after its rollout's waves (the device's labels
   * left its group and came back) must not send the device back from it.
   */
  withheld?: ReadonlySet<string>;
}

export function desiredState<R extends ReleaseFacts>(input: DesiredStateInput<R>): DesiredState<R> {
  let desired: R | null = null;
  let minimum: R | null = null;
  for (const r of input.releases) {
    if (r.status !== 'published' || r.channel !== input.channel) continue;
    if (input.withheld?.has(r.id) && !runsRelease(input.current, r)) continue;
    if (!desired || r.sequence > desired.sequence) desired = r;
    if (r.updatePolicy === 'mandatory' && (!minimum || r.sequence > minimum.sequence)) minimum = r;
  }
  const minSequence = minimum?.sequence ?? 0;
  const minVersion = minimum?.version ?? '';
  const current = input.current;
  let forceReason: ForceReason | null = null;
  if (current && currentStatus(input) === 'yanked') forceReason = 'current_yanked';
  else if ((current?.sequence ?? 0) < minSequence) forceReason = 'below_minimum';
  return { desired, minSequence, minVersion, forced: forceReason !== null, forceReason };
}

function currentStatus<R extends ReleaseFacts>(input: DesiredStateInput<R>): ReleaseStatus | null {
  const id = input.current?.releaseId;
  if (!id) return null;
  const known = input.releases.find((r) => r.id === id);
  return known?.status ?? input.currentReleaseStatus ?? null;
}

/**
 * Whether the device already runs `desired`: the same release id, or, when the device reported
 * only a version and a sequence, the same sequence (sequences are unique within an application).
 */
export function runsRelease(current: Installation | null, desired: Pick<ReleaseFacts, 'id' | 'sequence'>): boolean {
  if (!current) return false;
  if (current.releaseId !== null) return current.releaseId === desired.id;
  return current.sequence === desired.sequence;
}

/** Words for a job's `forceReason` (shown with the update job in the dashboard). */
export function forceReasonText(
  state: Pick<DesiredState, 'forceReason' | 'minSequence' | 'minVersion'>,
): string | null {
  switch (state.forceReason) {
    case 'current_yanked':
      return 'the installed release was yanked';
    case 'below_minimum':
      return `the installed release is below the mandatory release ${state.minVersion} (sequence ${state.minSequence})`;
    default:
      return null;
  }
}
