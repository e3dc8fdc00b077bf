import { DEVICE_STATES } from '@drover/shared';
import type { Schema } from '@drover/shared/api';
import type { Command } from 'commander';
import { agentNamerFor } from '../agent-names.js';
import { sessionCaller } from '../callers.js';
import { CliError } from '../errors.js';
import { printJson } from '../output/json.js';
import { formatTable } from '../output/table.js';
import { ago, shortTime } from '../output/time.js';
import type { Runtime } from '../runtime.js';
import { findApp } from '../session/lookups.js';
import { loadSettings } from '../settings.js';

type Binding = Schema<'DeviceBinding'>;
type ReleaseRef = NonNullable<Binding['current']>;

/** The states a device reports (docs/ota.md, "Device `state` values"), and `none`: no report yet. */
const STATES = [...DEVICE_STATES, 'none'] as const;
type StateFilter = (typeof STATES)[number];

/**
 * `drover app devices <app>`: the devices bound to an application, each with the release it runs
 * and the one it should run, the state it reported and its update job: after a rollout pauses,
 * which devices failed and why (`--state failed`).
 */
export function configureAppDevicesCommand(app: Command, rt: Runtime): void {
  app
    .command('devices')
    .description(
      'the devices bound to an application: the release each runs and should run, its state, update job and error',
    )
    .argument('<app>', "the application's slug or id")
    .option('--state <state>', `only the devices in this state: ${STATES.join(', ')} (none: no report yet)`)
    .option('--json', "print the API's answer (the bindings) as JSON")
    .action(async (name: string, flags: { state?: string; json?: boolean }, command: Command) => {
      const state = flags.state === undefined ? undefined : stateFilter(flags.state);
      const caller = sessionCaller(loadSettings(command.optsWithGlobals(), rt), rt);
      const found = await findApp(caller, name);
      const all = await caller.api.get<Binding[]>(`/orgs/${await caller.orgId()}/apps/${found.id}/devices`);
      const devices = state === undefined ? all : all.filter((b) => (b.state ?? 'none') === state);
      if (flags.json) return printJson(rt, devices);
      if (all.length === 0) {
        return rt.out(
          `${found.slug} has no devices: bind agents with \`drover app device-group ${found.slug} --selector <selector>\` or on its page in the dashboard\n`,
        );
      }
      if (devices.length === 0) return rt.out(`No device of ${found.slug} is in the state ${state}.\n`);
      const agentName = await agentNamerFor(
        caller,
        devices.map((b) => b.agentId),
      );
      const rows = devices.map((b) => [
        agentName(b.agentId),
        b.channel,
        b.origin,
        release(b.current, 'unknown'),
        `${release(b.desired, 'none published')}${b.desired !== null && b.forced ? ', forced' : ''}`,
        b.state ?? 'no report yet',
        b.lastReportAt === null ? 'never' : ago(b.lastReportAt),
        updateJob(b),
        b.error,
      ]);
      rt.out(
        formatTable(
          ['AGENT', 'CHANNEL', 'ORIGIN', 'INSTALLED', 'DESIRED', 'STATE', 'REPORTED', 'UPDATE JOB', 'ERROR'],
          rows,
        ),
      );
    });
}

function stateFilter(value: string): StateFilter {
  if ((STATES as readonly string[]).includes(value)) return value as StateFilter;
  throw new CliError(`--state: expected one of ${STATES.join(', ')}, got \`${value}\``);
}

/** `1.4.0 (#7)`; `none` when there is no release to name. */
function release(ref: ReleaseRef | null, none: string): string {
  return ref === null ? none : `${ref.version || '(no version)'} (#${ref.sequence})`;
}

/** The binding's update job: running, cancelled (held until a retry), or waiting for the maintenance window. */
function updateJob(b: Binding): string | null {
  if (b.activeJobId !== null) return `${b.activeJobId} in progress`;
  if (b.cancelledJobId !== null) return `${b.cancelledJobId} cancelled (held until a retry)`;
  if (b.waitingForWindow)
    return `waits for the window${b.nextWindowAt === null ? '' : ` (${shortTime(b.nextWindowAt)})`}`;
  return null;
}
