import { parseArgs } from 'node:util';

/**
 * The options every throughput benchmark takes (autocannon load, rounds, profiling and a
 * `--without` diagnosis switch whose allowed values each benchmark names).
 */
export interface LoadOptions {
  connections: number;
  duration: number;
  warmup: number;
  rounds: number;
  profile: string | undefined;
  without: string | undefined;
}

/** The integer value of option `--<name>`, at least `min`; throws saying what it got otherwise. */
export function integerOption(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`--${name}: expected an integer >= ${min}, got \`${raw}\``);
  return n;
}

function positiveInteger(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name}: expected a positive integer, got \`${raw}\``);
  return n;
}

export function parseLoadOptions(withoutChoices: readonly string[]): LoadOptions {
  const { values } = parseArgs({
    options: {
      connections: { type: 'string', default: '50' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '1' },
      profile: { type: 'string' },
      without: { type: 'string' },
    },
  });
  if (values.without !== undefined && !withoutChoices.includes(values.without)) {
    throw new Error(
      `--without: expected ${withoutChoices.map((c) => `\`${c}\``).join(' or ')}, got \`${values.without}\``,
    );
  }
  return {
    connections: positiveInteger('connections', values.connections),
    duration: positiveInteger('duration', values.duration),
    warmup: positiveInteger('warmup', values.warmup),
    rounds: positiveInteger('rounds', values.rounds),
    profile: values.profile,
    without: values.without,
  };
}
