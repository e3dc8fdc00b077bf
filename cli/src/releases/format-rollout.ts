import type { Schema } from '@drover/shared/api';
import { formatFields, formatTable } from '../output/table.js';
import { ago, shortTime } from '../output/time.js';

export type Rollout = Schema<'Rollout'>;

const pct = (value: number) => `${value}%`;

/** Seconds as the options take them: `45s`, `10m`, `1h30m`, `2d`. */
export function durationText(seconds: number): string {
  const parts: string[] = [];
  let rest = seconds;
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.join('') || '0s';
}

/** A rate from 0 to 1 as a percentage: `5%`, `0.5%`. */
const rate = (value: number) => pct(Math.round(value * 10_000) / 100);

/** Where the rollout stands: `running, wave 2 of 4 (10%)`, `paused by the failure threshold in wave 1 of 4 (1%)`, `completed`. */
export function rolloutState(r: Rollout): string {
  const wave = `wave ${r.currentWave + 1} of ${r.waves.length} (${pct(r.waves[r.currentWave]?.percent ?? 0)})`;
  switch (r.status) {
    case 'running':
      return `running, ${wave}`;
    case 'paused':
      return `paused ${r.pausedReason === 'failure_threshold' ? 'by the failure threshold' : 'by an operator'} in ${wave}`;
    case 'completed':
      return 'completed';
    case 'aborted':
      return `aborted in ${wave}`;
    case 'superseded':
      return `superseded in ${wave} (another release of the channel was published)`;
  }
}

/** One line: `Rollout of 1.4.0 on channel stable: running, wave 2 of 4 (10%): 20 of 200 devices`. */
export function describeRollout(r: Rollout, version: string): string {
  const reached = r.status === 'completed' ? r.deviceCount : (r.waves[r.currentWave]?.devices ?? 0);
  return `Rollout of ${version} on channel ${r.channel}: ${rolloutState(r)}: ${reached} of ${r.deviceCount} devices`;
}

/**
 * `drover rollout status`: the rollout's state and plan, one row per wave (its devices counting
 * those before it, the devices new in it and how their updates went), then its history. `me` is
 * the signed-in user, named by email in the history (others by their id).
 */
export function formatRolloutStatus(
  r: Rollout,
  release: { version: string; sequence: number },
  me: { userId: string; email: string },
  now = Date.now(),
): string {
  const threshold =
    `pauses when more than ${rate(r.maxFailureRate)} of a wave's ended updates failed` +
    (r.minAttempts > 1 ? ` (judged once ${r.minAttempts} ended)` : '');
  const fields: [string, string | null][] = [
    ['Release', `${release.version} (#${release.sequence}) on channel ${r.channel}`],
    ['Status', rolloutState(r)],
    ['Devices', `${r.deviceCount} (the channel's when it was published)`],
    ['Waves', r.waves.map((w) => pct(w.percent)).join(', ')],
    ['Soak', r.soakSeconds === 0 ? 'none' : `${durationText(r.soakSeconds)} after each wave but the last`],
    ['Threshold', threshold],
  ];
  if (r.soakEndsAt !== null) fields.push(['Soak ends', `${shortTime(r.soakEndsAt)} (${ago(r.soakEndsAt, now)})`]);
  fields.push(['Started', shortTime(r.createdAt)]);
  if (r.endedAt !== null) fields.push(['Ended', shortTime(r.endedAt)]);
  const rows = r.waves.map((w, i) => [
    String(i + 1),
    pct(w.percent),
    String(w.devices),
    String(w.devices - (i === 0 ? 0 : r.waves[i - 1]!.devices)),
    String(w.succeeded),
    String(w.failed),
    String(w.pending),
    shortTime(w.startedAt),
    shortTime(w.endedAt),
  ]);
  const history = r.history.map((h) => [shortTime(h.at), h.event, h.by === me.userId ? me.email : h.by, h.detail]);
  return [
    formatFields(fields),
    formatTable(['WAVE', 'PERCENT', 'DEVICES', 'NEW', 'SUCCEEDED', 'FAILED', 'PENDING', 'STARTED', 'ENDED'], rows),
    'History:\n' + formatTable(['AT', 'EVENT', 'BY', 'DETAIL'], history),
  ].join('\n');
}
