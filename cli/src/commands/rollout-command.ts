import type { Command } from 'commander';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import { describeRollout, formatRolloutStatus, type Rollout } from '../releases/format-rollout.js';
import { findRelease, releasesPath } from '../releases/lookup.js';
import type { Runtime } from '../runtime.js';
import { loadSettings } from '../settings.js';

interface Flags {
  app: string;
  json?: boolean;
}

interface MoveFlags extends Flags {
  wave?: string;
}

const MOVES = [
  ['pause', 'pause a running rollout: no new wave starts'],
  ['resume', "resume a paused rollout (one paused by the failure threshold accepts its wave's failures)"],
  ['advance', 'start the next wave now, without waiting (after the last wave: complete it)'],
  ['abort', 'abort the rollout: devices not yet given the release keep the previous one'],
] as const;

/** `drover rollout status|pause|resume|advance|abort`: the staged rollout of a release published wave by wave. */
export function configureRolloutCommand(program: Command, rt: Runtime): void {
  const group = program
    .command('rollout')
    .description(
      'the staged rollout of a release published with --waves: status, pause, resume, advance, abort (a session)',
    );

  group
    .command('status')
    .description("the rollout's state, each wave's devices and updates, the soak, and its history")
    .argument('<release>', 'the release: its id, or its version when no other release has it')
    .requiredOption('--app <slug-or-id>', 'the application')
    .option('--json', "print the API's answer (the rollout) as JSON")
    .action(async (value: string, flags: Flags, command: Command) => {
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const base = await releasesPath(caller, flags.app);
      const release = await findRelease(caller, base, value);
      const rollout = await caller.api.get<Rollout>(`${base}/${release.id}/rollout`);
      if (flags.json) return printJson(rt, rollout);
      rt.out(formatRolloutStatus(rollout, release, caller.session));
    });

  for (const [move, what] of MOVES) {
    group
      .command(move)
      .description(what)
      .argument('<release>', 'the release: its id, or its version when no other release has it')
      .requiredOption('--app <slug-or-id>', 'the application')
      .option(
        '--wave <n>',
        `${move} only if the rollout is still at wave <n> (from 1, as \`rollout status\` shows it), else refuse: a retried ${move} does not move it twice`,
      )
      .option('--json', "print the API's answer (the rollout after the move) as JSON")
      .action(async (value: string, flags: MoveFlags, command: Command) => {
        const wave = flags.wave === undefined ? undefined : waveNumber(flags.wave);
        const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
        const base = await releasesPath(caller, flags.app);
        const release = await findRelease(caller, base, value);
        // The API counts waves from 0 (`currentWave`); people, and this command's output, from 1.
        const rollout = await caller.api.post<Rollout>(
          `${base}/${release.id}/rollout/${move}`,
          wave === undefined ? undefined : { wave: wave - 1 },
        );
        if (flags.json) return printJson(rt, rollout);
        rt.out(`${describeRollout(rollout, release.version)}\n`);
      });
  }
}

/** `--wave`: a wave as people count them, from 1. */
function waveNumber(value: string): number {
  const n = /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new CliError(`--wave: expected a wave number from 1 (wave 2 of 3: --wave 2), got \`${value}\``);
  return n;
}
