import { parseDuration } from '../duration.js';
import { ApiError, CliError } from '../errors.js';

/** The rollout plan of `publishRelease` (docs/ota.md, "Staged rollouts"). */
export interface RolloutPlan {
  waves: number[];
  soakSeconds: number;
  maxFailureRate: number;
  minAttempts?: number;
}

export interface RolloutFlags {
  waves?: string;
  soak?: string;
  maxFailureRate?: string;
  minAttempts?: string;
}

/** The rollout options of `release publish` (and `release create --publish`), for commander. */
export const ROLLOUT_OPTIONS = [
  ['--waves <percents>', 'publish wave by wave: percentages of the devices, e.g. 1,10,50,100 (the last 100)'],
  ['--soak <duration>', 'with --waves: wait this long after a wave ended before the next, e.g. 10m (0: none)'],
  ['--max-failure-rate <rate>', 'with --waves: pause when failed ÷ ended updates of a wave is above it, e.g. 0.05'],
  ['--min-attempts <n>', "with --waves: judge a wave's failure rate once this many of its updates ended (default 1)"],
] as const;

/** A decimal number, signed or not (its range is the coordinator's rule). */
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$/;

/**
 * The plan the rollout options give, checked before any request (exit 2): null without
 * `--waves` (an immediate publish); `--soak` and `--max-failure-rate` are needed with it, and
 * need it. What the values must be beyond numbers (increasing waves, the last 100, a rate from 0
 * to 1, a soak of at most a week) is the coordinator's rule: its 422 names the options
 * (`rolloutRefusal`).
 */
export function rolloutPlan(flags: RolloutFlags): RolloutPlan | null {
  if (flags.waves === undefined) {
    const stray = (
      [
        ['--soak', flags.soak],
        ['--max-failure-rate', flags.maxFailureRate],
        ['--min-attempts', flags.minAttempts],
      ] as const
    ).filter(([, value]) => value !== undefined);
    if (stray.length > 0) {
      throw new CliError(
        `${stray.map(([name]) => name).join(' and ')} ${stray.length > 1 ? 'need' : 'needs'} --waves (a staged rollout); without --waves the release is published to every device at once`,
      );
    }
    return null;
  }
  const missing = [
    ...(flags.soak === undefined ? ['--soak'] : []),
    ...(flags.maxFailureRate === undefined ? ['--max-failure-rate'] : []),
  ];
  if (missing.length > 0) {
    throw new CliError(`--waves needs ${missing.join(' and ')} (e.g. --soak 10m --max-failure-rate 0.05)`);
  }
  const waves = flags.waves.split(',').map((part) => {
    const text = part.trim().replace(/%$/, '');
    if (!NUMBER.test(text)) {
      throw new CliError(
        `--waves: expected percentages separated by commas, such as 1,10,50,100, got \`${flags.waves}\` (\`${part.trim()}\` is not a number)`,
      );
    }
    return Number(text);
  });
  const soakMs = parseDuration(flags.soak!, '--soak', { zero: true });
  if (soakMs % 1000 !== 0) throw new CliError(`--soak: expected whole seconds, got \`${flags.soak}\``);
  const rateText = flags.maxFailureRate!.trim();
  if (!NUMBER.test(rateText)) {
    throw new CliError(
      `--max-failure-rate: expected a number from 0 to 1 (0.05: more than 5% failed pauses), got \`${flags.maxFailureRate}\``,
    );
  }
  const plan: RolloutPlan = { waves, soakSeconds: soakMs / 1000, maxFailureRate: Number(rateText) };
  if (flags.minAttempts !== undefined) {
    if (!/^\d+$/.test(flags.minAttempts.trim())) {
      throw new CliError(`--min-attempts: expected a whole number, got \`${flags.minAttempts}\``);
    }
    plan.minAttempts = Number(flags.minAttempts.trim());
  }
  return plan;
}

const OPTION_OF_FIELD: Record<string, string> = {
  waves: '--waves',
  soakSeconds: '--soak',
  maxFailureRate: '--max-failure-rate',
  minAttempts: '--min-attempts',
};

/**
 * The coordinator's 422 for a rollout plan as the error to print: each detail under
 * `body.rollout` named by its option (`--waves: wave 2: expected waves in increasing order, got 5
 * after 10`), on one line; any other error unchanged.
 */
export function rolloutRefusal(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.status !== 422) return error;
  const details = (error.body as { details?: unknown } | null)?.details;
  if (!Array.isArray(details)) return error;
  const named: string[] = [];
  for (const d of details as unknown[]) {
    const { path, message } = (d ?? {}) as { path?: unknown; message?: unknown };
    if (typeof path !== 'string' || typeof message !== 'string') return error;
    const [, field, index] = /^body\.rollout\.(\w+)(?:\.(\d+))?$/.exec(path) ?? [];
    const option = field === undefined ? undefined : OPTION_OF_FIELD[field];
    if (option === undefined) return error;
    named.push(`${option}: ${index === undefined ? '' : `wave ${Number(index) + 1}: `}${message}`);
  }
  return named.length === 0 ? error : new ApiError(error.status, error.code, named.join('; '), error.body);
}
