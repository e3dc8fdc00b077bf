import type { Rollout, RolloutEvent, RolloutStatus } from '../api/rollouts';

/** A rollout in words, for its panel and the release's badge (docs/ota.md, "Staged rollouts"). */

export const ROLLOUT_STATUS_CLASS: Record<RolloutStatus, string> = {
  running: 'status-running',
  paused: 'status-pending',
  completed: 'status-success',
  aborted: 'status-failed',
  superseded: 'status-skipped',
};

/** The release's badge: `rollout running, wave 2 of 3`. */
export function badgeWords(rollout: Rollout): string {
  const wave = `wave ${rollout.currentWave + 1} of ${rollout.waves.length}`;
  return rollout.status === 'running' || rollout.status === 'paused'
    ? `rollout ${rollout.status}, ${wave}`
    : `rollout ${rollout.status}`;
}

/** The last history entry of an event, if any. */
export const lastEvent = (rollout: Rollout, event: RolloutEvent['event']): RolloutEvent | undefined =>
  rollout.history.findLast((h) => h.event === event);

/**
 * Why a paused rollout is paused: `Paused: wave 1 crossed the failure threshold (1 of 1 updates
 * failed, 100 % > 5 %).` from the last pause's detail, or who paused it.
 */
export function pausedWords(rollout: Rollout, who: (by: string) => string): string {
  const pause = lastEvent(rollout, 'pause');
  if (rollout.pausedReason === 'failure_threshold') {
    const m = /^wave (\d+): (.*?)(?: \((.*)\))?$/.exec(pause?.detail ?? '');
    if (m) {
      return `Paused: wave ${m[1]} crossed the failure threshold (${m[2]}${m[3] ? `, ${m[3]}` : ''}). No new device gets the release until it is resumed (accepting these failures), advanced or aborted.`;
    }
    return `Paused: wave ${rollout.currentWave + 1} crossed the failure threshold. No new device gets the release until it is resumed, advanced or aborted.`;
  }
  return `Paused by ${pause ? who(pause.by) : 'a member'}: no new wave starts until it is resumed.`;
}

/** A history entry's event in words. */
export const EVENT_WORDS: Record<RolloutEvent['event'], string> = {
  start: 'started the rollout',
  wave_end: 'ended a wave',
  pause: 'paused the rollout',
  resume: 'resumed the rollout',
  advance: 'started the next wave',
  abort: 'aborted the rollout',
  complete: 'completed the rollout',
  supersede: 'ended the rollout as superseded',
};

/**
 * Who moved the rollout: `Drover` for the coordinator itself, a member's email (`(you)` after
 * yours), or, when the members cannot be read, `you` or `a member`.
 */
export function whoWords(by: string, me: string | undefined, emails: Map<string, string> | undefined): string {
  if (by === 'system') return 'Drover';
  const email = emails?.get(by);
  if (email) return by === me ? `${email} (you)` : email;
  if (by === me) return 'you';
  return emails ? 'a former member' : 'a member';
}

/** The status line's ending words for an ended rollout. */
export function endedWords(rollout: Rollout): string {
  const abort = lastEvent(rollout, 'abort');
  switch (rollout.status) {
    case 'completed':
      return `Completed: every wave went through, and every device of channel ${rollout.channel} gets the release, those bound later too.`;
    case 'aborted':
      return `Aborted${abort?.detail ? ` (${abort.detail})` : ''}: devices not yet given the release keep the previous one, and so do devices bound later.`;
    case 'superseded':
      return `Superseded: another release was published on channel ${rollout.channel}; devices this rollout had not reached never get it.`;
    default:
      return '';
  }
}
