import type { RequestBody } from '@drover/shared/api';
import { percentWords } from '@drover/shared/percent-words';
import { counted } from '@drover/shared/counted';
import { decimal } from './decimal.js';

/**
 * The publish dialog's rollout plan, as pure functions: its presets, the custom fields read into
 * the API's plan, and how many devices each wave would hold.
 */

/** The plan of a publish body (the same as api/rollouts.ts; this module imports no other, so tests can). */
type RolloutPlan = NonNullable<NonNullable<RequestBody<'publishRelease'>>['rollout']>;

export type PlanChoice = 'now' | 'canary' | 'custom';

/** 1 % of the devices, then 10 %, then all; 10 minutes between waves; paused above 5 % failed. */
export const CANARY: RolloutPlan = { waves: [1, 10, 100], soakSeconds: 600, maxFailureRate: 0.05, minAttempts: 1 };

export const PLAN_CHOICES: readonly { value: PlanChoice; label: string; hint: string }[] = [
  { value: 'now', label: 'All at once', hint: 'every device of the channel is told at once' },
  {
    value: 'canary',
    label: 'Canary 1% → 10% → 100%',
    hint: 'a soak of 10 minutes after each wave; pauses when more than 5 % of a wave’s updates fail',
  },
  { value: 'custom', label: 'Custom', hint: 'your waves, soak and failure threshold' },
];

export type SoakUnit = 'minutes' | 'seconds';

/** The custom plan's fields as typed. */
export interface PlanFields {
  waves: string;
  soak: string;
  soakUnit: SoakUnit;
  /** In percent. */
  maxFailureRate: string;
  minAttempts: string;
}

/** The custom fields start as the canary plan. */
export const CANARY_FIELDS: PlanFields = {
  waves: CANARY.waves.join(', '),
  soak: String(CANARY.soakSeconds / 60),
  soakUnit: 'minutes',
  maxFailureRate: String(CANARY.maxFailureRate * 100),
  minAttempts: String(CANARY.minAttempts),
};

/**
 * `"1, 10, 100"` → `[1, 10, 100]` (commas or spaces between, a `%` after each allowed: `5 %, 25 %`,
 * as the preview writes them); a token that is no number: null.
 */
export function parseWaves(text: string): number[] | null {
  const tokens = text
    .replace(/\s+%/g, '%')
    .split(/[\s,;]+/)
    .filter((t) => t !== '');
  const waves = tokens.map((t) => decimal(t.replace(/%$/, '')));
  return waves.every((p) => Number.isFinite(p)) ? waves : null;
}

/** A problem of a field the API cannot be asked about (no number), in the API's shape. */
export interface PlanProblem {
  path: string;
  message: string;
}

const number = (text: string): number | null => {
  const t = text.trim();
  if (t === '') return null;
  const n = decimal(t);
  return Number.isFinite(n) ? n : null;
};

/**
 * The plan the API is sent, or the fields that hold no number. Whether the numbers make a good
 * plan (increasing waves, the last 100, the ranges) is the API's to say: its 422 names the field.
 */
export function planOf(fields: PlanFields): { plan: RolloutPlan } | { problems: PlanProblem[] } {
  const problems: PlanProblem[] = [];
  const at = (field: string) => `body.rollout.${field}`;
  const waves = parseWaves(fields.waves);
  if (waves === null) {
    problems.push({
      path: at('waves'),
      message: `expected percentages separated by commas, such as 5, 25, 100, got “${fields.waves.trim()}”`,
    });
  }
  const soak = number(fields.soak);
  if (soak === null) problems.push({ path: at('soakSeconds'), message: `expected a number of ${fields.soakUnit}` });
  // A percentage may be typed with its sign (`5 %`, `2.5%`), as the dialog shows it.
  const rate = number(fields.maxFailureRate.trim().replace(/\s*%$/, ''));
  if (rate === null) problems.push({ path: at('maxFailureRate'), message: 'expected a percentage, such as 5' });
  const minAttempts = number(fields.minAttempts);
  if (minAttempts === null) problems.push({ path: at('minAttempts'), message: 'expected a whole number, such as 1' });
  if (problems.length > 0 || waves === null || soak === null || rate === null || minAttempts === null) {
    return { problems };
  }
  return {
    plan: {
      waves,
      // Rounded to the millisecond's precision: 0.1 minutes is 6 seconds, not 6.000000000000001.
      soakSeconds: fields.soakUnit === 'minutes' ? Math.round(soak * 60 * 1000) / 1000 : soak,
      // Without the division's noise (1.1 % is 0.011, not 0.011000000000000001), however small.
      maxFailureRate: Number((rate / 100).toPrecision(15)),
      minAttempts,
    },
  };
}

/**
 * How many devices the waves hold out of `devices`, each counting the ones before it:
 * `ceil(p × devices / 100)`, at least 1 (the coordinator's rule, docs/ota.md "Staged rollouts").
 */
export function waveSizes(waves: readonly number[], devices: number): number[] {
  if (devices === 0) return waves.map(() => 0);
  return waves.map((p) => Math.min(devices, Math.max(1, Math.ceil((p * devices) / 100 - 1e-9))));
}

/**
 * The preview under the plan: `wave 1 (1 %): 1 device, wave 2 (10 %): 1 (no new device), wave 3
 * (100 %): 4` for the devices on the channel now; null for waves the API will refuse anyway.
 */
export function previewOf(waves: readonly number[], devices: number, channel: string): string | null {
  if (waves.length === 0 || waves.some((p, i) => p <= 0 || p > 100 || (i > 0 && p <= waves[i - 1]!))) return null;
  if (devices === 0)
    return `No device is on channel ${channel} now: devices bound later get the release once the rollout completes.`;
  const sizes = waveSizes(waves, devices);
  const parts = waves.map((p, i) => {
    const added = sizes[i]! - (i === 0 ? 0 : sizes[i - 1]!);
    const n = i === 0 ? counted(sizes[i]!, 'device') : String(sizes[i]);
    return `wave ${i + 1} (${p} %): ${n}${i > 0 && added === 0 ? ' (no new device)' : ''}`;
  });
  return `Of the ${counted(devices, 'device')} on channel ${channel} now: ${parts.join(', ')}; each wave counts the devices of the waves before it.`;
}

/** `10 min`, `90 s`, `1 h 30 min`, `none` */
export function soakWords(seconds: number): string {
  if (seconds === 0) return 'none';
  if (seconds % 60 !== 0 || seconds < 60) return `${seconds} s`;
  const minutes = seconds / 60;
  if (minutes < 60 || minutes % 60 !== 0) {
    return minutes >= 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min` : `${minutes} min`;
  }
  return `${minutes / 60} h`;
}

/** `5 %` from a rate of 0.05 */

/** The plan in one sentence: `waves of 1, 10, 100 %; a soak of 10 min; pauses above 5 % failed (after 1 update of a wave)`. */
export function planWords(plan: RolloutPlan): string {
  const min = plan.minAttempts ?? 1;
  return (
    `waves of ${plan.waves.join(', ')} %; a soak of ${soakWords(plan.soakSeconds)} after each wave; ` +
    `pauses when more than ${percentWords(plan.maxFailureRate)} of a wave’s updates fail ` +
    `(judged once ${min === 1 ? '1 update' : `${min} updates`} of the wave ended)`
  );
}
